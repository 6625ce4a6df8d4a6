/**
 * A sandbox's network policy as data: the three modes, the allow-list entry grammar and the matcher the
 * egress proxy applies. Pure (no Node): the contract validates entries with it and the renderer shows
 * its messages, so the grammar is written here once.
 *
 * Why by hand: the entry grammar is ours (HOST[:PORT], `*.` wildcards, CIDR, bracketed IPv6) and the
 * renderer cannot use `node:net`'s BlockList; the address parsing is the small part of RFC 4291 we need.
 */
import { SandboxDeskError } from './errors.js';

/** open: the backend's ordinary network. offline: no route at all. allow: only the allow list, through the egress proxy. */
export type NetworkMode = 'open' | 'offline' | 'allow';
export const NETWORK_MODES: readonly NetworkMode[] = ['open', 'offline', 'allow'];

export interface NetworkPolicy {
  mode: NetworkMode;
  /** Normalized allow entries (lowercase, no trailing dot); used only when mode is `allow`. */
  allow: string[];
}

export const OPEN_POLICY: NetworkPolicy = { mode: 'open', allow: [] };

export type AllowRule =
  | { kind: 'host'; host: string; port: number | null }
  | { kind: 'wildcard'; suffix: string; port: number | null }
  | { kind: 'cidr'; family: 4 | 6; bits: bigint; prefix: number; port: number | null };

/** One line for every refusal: what a valid entry looks like. */
export const ALLOW_ENTRY_HINT =
  'valid entries: example.com, example.com:443, *.example.com (wildcard only as the leftmost label), 10.0.0.0/8, 192.168.1.5:8080, fd00::/8, [2001:db8::1]:443; ports are 1-65535';

function bad(entry: string, why: string): SandboxDeskError {
  return new SandboxDeskError('invalid_input', `allow entry ${JSON.stringify(entry)} is not valid: ${why}`, { hint: ALLOW_ENTRY_HINT });
}

function parsePort(entry: string, text: string): number {
  if (!/^\d{1,5}$/.test(text)) throw bad(entry, `port ${JSON.stringify(text)} is not a number`);
  const n = Number(text);
  if (n < 1 || n > 65535) throw bad(entry, `port ${n} is outside 1-65535`);
  return n;
}

export function parseIPv4(text: string): bigint | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  let v = 0n;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || (p.length > 1 && p.startsWith('0')) || Number(p) > 255) return null;
    v = (v << 8n) | BigInt(Number(p));
  }
  return v;
}

export function parseIPv6(text: string): bigint | null {
  if (!/^[0-9a-fA-F:.]+$/.test(text) || text.length < 2) return null;
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const groups = (s: string): number[] | null => {
    if (s === '') return [];
    const out: number[] = [];
    const parts = s.split(':');
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i]!;
      if (i === parts.length - 1 && p.includes('.')) {
        const v4 = parseIPv4(p);
        if (v4 === null) return null;
        out.push(Number(v4 >> 16n), Number(v4 & 0xffffn));
      } else if (/^[0-9a-fA-F]{1,4}$/.test(p)) out.push(parseInt(p, 16));
      else return null;
    }
    return out;
  };
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  if (!head || !tail) return null;
  const fill = 8 - head.length - tail.length;
  if (halves.length === 2 ? fill < 1 : fill !== 0) return null;
  const all = [...head, ...Array<number>(halves.length === 2 ? fill : 0).fill(0), ...tail];
  return all.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n);
}

/** An IP literal as the proxy sees it (v6 possibly in brackets), or null when it is a name. */
export function parseIp(text: string): { family: 4 | 6; bits: bigint } | null {
  const t = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const v4 = parseIPv4(t);
  if (v4 !== null) return { family: 4, bits: v4 };
  const v6 = parseIPv6(t);
  if (v6 !== null) {
    // An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is that IPv4 address: a v4 CIDR must decide it.
    if (v6 >> 32n === 0xffffn) return { family: 4, bits: v6 & 0xffffffffn };
    return { family: 6, bits: v6 };
  }
  return null;
}

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

function checkHostName(entry: string, host: string): void {
  if (host.length === 0) throw bad(entry, 'the host is empty');
  if (host.length > 253) throw bad(entry, 'the host is longer than 253 characters');
  if (host.includes('*')) throw bad(entry, 'a wildcard may only be the whole leftmost label, as in *.example.com');
  for (const label of host.split('.')) {
    if (!LABEL.test(label)) throw bad(entry, `${JSON.stringify(label)} is not a host name label (letters, digits and inner -)`);
  }
  if (/^\d+$/.test(host.split('.').pop()!)) throw bad(entry, 'it looks like an IP address but is not one');
}

/** Trimmed, lowercase, and a name's trailing dot dropped (before a port too). */
function canonical(raw: string): string {
  return raw
    .trim()
    .toLowerCase()
    .replace(/\.(:\d*)?$/, '$1');
}

/** Parses one allow entry; throws `invalid_input` naming what was wrong and what a valid one looks like. */
export function parseAllowEntry(raw: string): AllowRule {
  const entry = canonical(raw);
  if (entry === '') throw bad(raw, 'it is empty');
  if (/\s/.test(entry)) throw bad(raw, 'it contains spaces');
  // CIDR: ADDRESS/PREFIX
  const slash = entry.indexOf('/');
  if (slash >= 0) {
    const addr = entry.slice(0, slash);
    const prefixText = entry.slice(slash + 1);
    const ip = parseIp(addr);
    if (!ip || addr.startsWith('[')) throw bad(raw, `${JSON.stringify(addr)} is not an IPv4 or IPv6 address`);
    const max = ip.family === 4 ? 32 : 128;
    if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > max)
      throw bad(raw, `prefix /${prefixText} is not 0-${max} for IPv${ip.family}`);
    const prefix = Number(prefixText);
    const width = BigInt(max);
    const mask = prefix === 0 ? 0n : ((1n << BigInt(prefix)) - 1n) << (width - BigInt(prefix));
    return { kind: 'cidr', family: ip.family, bits: ip.bits & mask, prefix, port: null };
  }
  // [v6]:port or [v6]
  if (entry.startsWith('[')) {
    const m = /^\[([^\]]+)\](?::(.*))?$/.exec(entry);
    const ip = m ? parseIp(m[1]!) : null;
    if (!m || !ip) throw bad(raw, 'a bracketed entry is an IPv6 address, e.g. [2001:db8::1]:443');
    return {
      kind: 'cidr',
      family: ip.family,
      bits: ip.bits,
      prefix: ip.family === 4 ? 32 : 128,
      port: m[2] !== undefined ? parsePort(raw, m[2]) : null,
    };
  }
  // A bare IPv6 address (several colons): no port without brackets.
  if ((entry.match(/:/g) ?? []).length > 1) {
    const ip = parseIp(entry);
    if (!ip) throw bad(raw, 'it is neither a host nor an IP address');
    return { kind: 'cidr', family: ip.family, bits: ip.bits, prefix: ip.family === 4 ? 32 : 128, port: null };
  }
  const colon = entry.lastIndexOf(':');
  const host = colon >= 0 ? entry.slice(0, colon) : entry;
  const port = colon >= 0 ? parsePort(raw, entry.slice(colon + 1)) : null;
  const v4 = parseIPv4(host);
  if (v4 !== null) return { kind: 'cidr', family: 4, bits: v4, prefix: 32, port };
  if (host.startsWith('*.')) {
    const suffix = host.slice(2);
    checkHostName(raw, suffix);
    return { kind: 'wildcard', suffix, port };
  }
  checkHostName(raw, host);
  return { kind: 'host', host, port };
}

/** The entry as stored and shown: lowercase, trimmed, no trailing dot (parsing it proves it valid). */
export function normalizeAllowEntry(raw: string): string {
  parseAllowEntry(raw);
  return canonical(raw);
}

/** The problem with an entry as one line, or null when it is valid (for zod refinements and forms). */
export function allowEntryProblem(raw: string): string | null {
  try {
    parseAllowEntry(raw);
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** Whether a CIDR (its family, masked bits and prefix) contains the address. */
export function cidrContains(rule: { family: 4 | 6; bits: bigint; prefix: number }, ip: { family: 4 | 6; bits: bigint }): boolean {
  if (rule.family !== ip.family) return false;
  const width = BigInt(rule.family === 4 ? 32 : 128);
  const shift = width - BigInt(rule.prefix);
  return ip.bits >> shift === rule.bits >> shift;
}

/**
 * Does the list allow a connection to host:port? A name matches host and wildcard rules only (a
 * wildcard matches subdomains, never the bare domain); an IP literal matches CIDR rules only, so a
 * raw-IP connection is refused unless a CIDR (or an IP entry) allows it.
 */
export function isAllowed(rules: readonly AllowRule[], host: string, port: number): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  const ip = parseIp(name);
  return rules.some((r) => {
    if (r.port !== null && r.port !== port) return false;
    if (r.kind === 'cidr') return ip !== null && cidrContains(r, ip);
    if (ip) return false;
    if (r.kind === 'host') return r.host === name;
    return name.endsWith(`.${r.suffix}`);
  });
}

/** One connection the egress proxy decided on, as the log keeps it. */
export interface NetworkLogEntry {
  at: string;
  sandbox: string;
  host: string;
  port: number;
  verdict: 'allowed' | 'denied';
  /** `connect` (HTTPS tunnel), `http` (plain request through the proxy). */
  kind: 'connect' | 'http';
  /** Why a denial happened, e.g. "not on the allow list", "raw IP not covered by a CIDR". */
  reason: string | null;
  /**
   * The process inside the sandbox that opened the connection, e.g. `curl (pid 42): curl -s http://…`;
   * null where it is not known (QEMU guests; a process gone before it was looked up). See
   * docs/network-policy.md.
   */
  process: string | null;
  /** That process's pid inside the sandbox, and its ancestors' (parent first), when process is known. */
  pid?: number;
  ancestry?: number[];
  /** The agent call (call log id) whose command made this connection, when it is known (filled on reading). */
  callId?: number;
}
