/**
 * Addresses an allowed *name* must not lead to: this machine's own (its loopback, every address of its
 * interfaces), link-local, unspecified, and the private ranges of the networks around it. A name is
 * the agent's to choose within its allow list — `localhost`, this machine's hostname, or a wildcard
 * under DNS the agent controls can resolve to 127.0.0.1 — so the proxy, which runs on this machine,
 * would otherwise dial the host's own services for it while `CONNECT 127.0.0.1` is refused as a raw IP.
 * Such an address is reached only when a CIDR (or IP) entry of the sandbox's allow list covers it:
 * that entry is the person saying "this address", which a name is not.
 */
import { networkInterfaces } from 'node:os';
import { cidrContains, isAllowed, parseAllowEntry, parseIp, type AllowRule } from '../../shared/network-policy.js';

interface Range {
  family: 4 | 6;
  bits: bigint;
  prefix: number;
  what: string;
}

/** A range as the allow list's grammar reads a CIDR entry (parseAllowEntry), with what to call it. */
function range(cidr: string, what: string): Range {
  const rule = parseAllowEntry(cidr);
  if (rule.kind !== 'cidr') throw new Error(`${cidr} is not a CIDR`);
  return { family: rule.family, bits: rule.bits, prefix: rule.prefix, what };
}

/** IPv4-mapped IPv6 (::ffff:a.b.c.d) needs no entry: parseIp reads it as the IPv4 address it is. */
const RANGES: readonly Range[] = [
  range('127.0.0.0/8', 'loopback'),
  range('0.0.0.0/8', 'unspecified'),
  range('169.254.0.0/16', 'link-local'),
  range('10.0.0.0/8', 'private'),
  range('172.16.0.0/12', 'private'),
  range('192.168.0.0/16', 'private'),
  range('100.64.0.0/10', 'shared address space (CGNAT)'),
  range('::1/128', 'loopback'),
  range('::/128', 'unspecified'),
  // IPv4-compatible (deprecated, RFC 4291 §2.5.5.1): an IPv4 address in another form.
  range('::/96', 'IPv4-compatible'),
  range('fe80::/10', 'link-local'),
  range('fec0::/10', 'site-local'),
  range('fc00::/7', 'private (unique local)'),
];

/** This machine's own addresses, read again at most once a second (interfaces come and go: docker's bridges). */
let own: { at: number; list: Array<{ family: 4 | 6; bits: bigint }> } = { at: -Infinity, list: [] };
function ownAddresses(): Array<{ family: 4 | 6; bits: bigint }> {
  if (Date.now() - own.at < 1000) return own.list;
  const list: Array<{ family: 4 | 6; bits: bigint }> = [];
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) {
      const ip = parseIp(a.address.replace(/%.*$/, ''));
      if (ip) list.push(ip);
    }
  }
  own = { at: Date.now(), list };
  return list;
}

/**
 * Why `address` is host-local or private ("loopback", "this machine's own address", …), or null when it
 * is none of those. Anything that is not an address at all is refused too: only addresses are dialled.
 */
export function hostLocalReason(address: string): string | null {
  const ip = parseIp(address.replace(/%.*$/, ''));
  if (!ip) return 'not an address';
  const r = RANGES.find((x) => cidrContains(x, ip));
  if (r) return r.what;
  if (ownAddresses().some((o) => o.family === ip.family && o.bits === ip.bits)) return "this machine's own address";
  return null;
}

/**
 * Why a connection to `address`:`port` under `rules` is refused for the address it reaches: host-local or
 * private and no CIDR (or IP) entry of the list covering it. Null when the address may be dialled. The
 * one rule for choosing a verdict's addresses and for checking an open tunnel again after a change.
 */
export function addressRefusal(rules: readonly AllowRule[], address: string, port: number): string | null {
  const why = hostLocalReason(address);
  return why && !isAllowed(rules, address, port) ? why : null;
}
