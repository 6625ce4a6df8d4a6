/**
 * The egress proxy: the only way out of a sandbox whose policy is `allow`. It decides; its compiled
 * data path (src/sandbox/network/pump/, driven by egress-pump.ts) holds the sockets, moves the bytes
 * and writes each sandbox's connection log.
 *
 * Each sandbox is served on its own Unix sockets (so a connection's sandbox is known from where it
 * arrived, and nothing listens on a TCP port of this machine): `proxy.sock` takes connections as they
 * are (QEMU's guestfwd), `relay.sock` the links of a docker sandbox's relay, which passes over it the
 * listening socket of the sandbox's proxy address, so the pump accepts the sandbox's TCP connections
 * itself (egress-relay-script.ts). The pump reads each request head and asks here; the answer is a
 * dial (with the addresses resolved here: the sandbox needs no DNS, and a name is resolved only once
 * it is allowed) or an answer to send (a refusal). It speaks HTTP CONNECT (HTTPS and any TCP tunnel)
 * and plain HTTP (absolute-form requests), and checks the destination against the sandbox's allow list
 * before anything is opened: the CONNECT authority, the request's URL host and its Host header (they
 * must agree, one Host at most, the URL's authority plain host[:port]); for TLS the pump holds the
 * tunnel's ClientHello, reassembled across records, and cuts it off when it names another host than
 * CONNECT did, or none, or cannot be read. A name is dialled only at addresses that are not this
 * machine's own or a private network's unless a CIDR entry covers them (host-local.ts). A plain-HTTP
 * request goes upstream in origin form with `Connection: close`, so one client connection is one
 * decided request.
 *
 * The policies are read from policies.json, again whenever it changed (one stat per decision). The
 * pump keeps an allowed verdict for requests identical to the one decided, while that file is
 * unchanged (pump/verdicts.c): the same request again is not a question here, and a change of the
 * policy takes effect on the next connection all the same.
 *
 * Every decision is on the sandbox's log before its answer leaves (a client that reads the log right
 * after its answer finds the line), with the process behind the connection where the pump found it.
 *
 * Why the data path is compiled: each connection handled on node:net cost ~1.4 ms of CPU on this
 * project's 2-core machines, and a small request through the proxy took 1.5x as long as without
 * (docs/network-policy.md); the decisions are a few microseconds of it.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { existsSync, statSync } from 'node:fs';
import { isAllowed, parseAllowEntry, parseIp, type AllowRule, type NetworkPolicy } from '../../shared/network-policy.js';
import {
  DEFAULT_PUMP_LIMITS,
  EgressPump,
  pumpBinary,
  PUMP_MISSING,
  type FoundProcess,
  type PumpLimits,
  type ServedAt,
} from './egress-pump.js';
import { addressRefusal } from './host-local.js';
import { headerOf, parseRequestHead, type RequestHead } from './http-head.js';
import { LOG_MAX_BYTES, readPolicies } from './network-files.js';

export interface EgressProxyOptions {
  /** The sandboxes' policies (network-files.ts policiesFile), re-read whenever the file changed. */
  policiesFile: string;
  /** Gives up connecting to a destination after this long (default 10 s): nothing hangs. */
  connectTimeoutMs?: number;
  /** The proxy's own messages (the daemon's proxy.log): what a user must know that no log line shows. */
  say?(message: string): void;
  /** Names to addresses (default: this machine's resolver); only allowed names are asked. */
  resolve?(host: string): Promise<string[]>;
  /** How long the pump keeps an allowed verdict on a name, its addresses with it (default 30 s). */
  keepNameMs?: number;
  /** The pump's binary (default: pumpBinary()). */
  pumpPath?: string | null;
  /** Past this a sandbox's log becomes its older half (default LOG_MAX_BYTES). */
  logMaxBytes?: number;
  /** What one sandbox may hold in the pump at once (default DEFAULT_PUMP_LIMITS). */
  limits?: Partial<PumpLimits>;
}

interface Decision {
  allowed: boolean;
  reason: string | null;
  /** The sandbox's allow list, parsed: which host-local addresses a CIDR entry lets it reach (act). */
  rules: readonly AllowRule[];
}

/** Parses `host:port` / `[v6]:port` as CONNECT carries it. */
export function splitAuthority(authority: string, defaultPort: number | null): { host: string; port: number } | null {
  const m = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(authority) ?? /^([^:[\]]+)(?::(\d{1,5}))?$/.exec(authority);
  if (!m) return null;
  const port = m[2] !== undefined ? Number(m[2]) : defaultPort;
  if (port === null || port < 1 || port > 65535) return null;
  return { host: m[1]!.toLowerCase().replace(/\.$/, ''), port };
}

/** A destination the proxy will consider: an IP address or a DNS name (letters, digits, `-`, `_`, dots). */
function plausibleHost(host: string): boolean {
  return parseIp(host) !== null || /^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/.test(host);
}

/** This machine's resolver, every address in its order (the pump tries them in turn). */
async function resolveAll(host: string): Promise<string[]> {
  return (await dnsLookup(host, { all: true, verbatim: true })).map((a) => a.address);
}

/** How long the pump is left down after it died, doubling while it keeps dying (at most RESTART_MAX_MS). */
const RESTART_MIN_MS = 100;
const RESTART_MAX_MS = 5_000;
/** An allowed verdict on an address holds while the policies do (nothing to resolve again). */
const KEEP_ADDRESS_MS = 10 * 60_000;
const KEEP_NAME_MS = 30_000;
/** How often policies.json is looked at (a stat) for a change that must reach connections already open. */
const POLICY_WATCH_MS = 250;

export class EgressProxy {
  private readonly servers = new Map<string, { key: number; at: ServedAt; served: boolean }>();
  private readonly byKey = new Map<number, string>();
  private nextKey = 1;
  private readonly rulesCache = new Map<string, { key: string; rules: AllowRule[] }>();
  private pump: EgressPump | null = null;
  private starting: Promise<EgressPump> | null = null;
  private closed = false;
  private restartMs = RESTART_MIN_MS;
  private restartTimer: NodeJS.Timeout | null = null;
  private policies: { stamp: string; bySandbox: Record<string, NetworkPolicy> } = { stamp: '', bySandbox: {} };
  /** How many request heads the pump has asked about (the rest it answered on kept verdicts). */
  asked = 0;
  private policyTimer: NodeJS.Timeout | null = null;
  /** A re-check of open connections running, and whether another change came meanwhile. */
  private rechecking: Promise<void> | null = null;
  private recheckAgain = false;

  constructor(private readonly opts: EgressProxyOptions) {}

  /** The pump's pid while it runs (tests kill it). */
  get pumpPid(): number | null {
    return this.pump?.pid ?? null;
  }

  private running(): Promise<EgressPump> {
    if (this.pump) return Promise.resolve(this.pump);
    if (this.closed) return Promise.reject(new Error('the egress proxy is closed'));
    if (this.starting) return this.starting;
    const binary = this.opts.pumpPath === undefined ? pumpBinary() : this.opts.pumpPath;
    if (!binary) return Promise.reject(new Error(PUMP_MISSING));
    const pump = new EgressPump(binary, {
      conn: (id, key, head) => this.onConn(pump, id, key, head),
      say: (m) => this.opts.say?.(m),
      exit: (why) => this.lost(pump, why),
    });
    const limits = { ...DEFAULT_PUMP_LIMITS, ...this.opts.limits };
    this.starting = pump.start(this.opts.policiesFile, this.opts.logMaxBytes ?? LOG_MAX_BYTES, limits).then(
      () => {
        this.starting = null;
        if (this.closed) {
          pump.dispose();
          throw new Error('the egress proxy is closed');
        }
        this.pump = pump;
        return pump;
      },
      (err: unknown) => {
        this.starting = null;
        throw err;
      },
    );
    return this.starting;
  }

  /**
   * The pump died: every sandbox lost its way out with it (its relays' listeners closed with the pump:
   * their addresses refuse, fails closed). It is started again and serves them all again; the relays
   * link again on their own.
   */
  private lost(pump: EgressPump, why: string): void {
    if (this.pump !== pump) return;
    this.pump = null;
    for (const s of this.servers.values()) s.served = false;
    this.opts.say?.(`the egress pump exited (${why}): its sandboxes have no network until it is back; starting it again`);
    this.restartLater();
  }

  private restartLater(): void {
    if (this.closed || this.restartTimer) return;
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      void this.reserve();
    }, this.restartMs);
    this.restartMs = Math.min(RESTART_MAX_MS, this.restartMs * 2);
  }

  private async reserve(): Promise<void> {
    try {
      const pump = await this.running();
      for (const [sandbox, s] of this.servers) {
        if (s.served) continue;
        await pump.serve(s.key, sandbox, s.at);
        s.served = true;
        this.opts.say?.(`${sandbox}: served again`);
      }
      this.restartMs = RESTART_MIN_MS;
    } catch (err) {
      this.opts.say?.(`the egress pump could not serve again: ${(err as Error).message}`);
      this.restartLater();
    }
  }

  /**
   * Serves one sandbox on a Unix socket that takes connections as they are (QEMU's guestfwd, tests),
   * and — with `at.relay` — on the socket its docker relay passes its listener over
   * (egress-relay-script.ts). Both 0666 (the relay connects as root of its own container, which is not
   * this machine's root), replaced if stale. Its decisions go to `at.log`.
   */
  async listen(sandbox: string, at: ServedAt): Promise<void> {
    if (this.servers.has(sandbox)) return;
    const pump = await this.running();
    const key = this.nextKey++;
    await pump.serve(key, sandbox, at);
    this.servers.set(sandbox, { key, at, served: true });
    this.byKey.set(key, sandbox);
    this.watchPolicies();
  }

  /**
   * Stops serving a sandbox (its sockets are removed: its relay then fails closed); its connections
   * are closed, each open one logged with `why`.
   */
  async unlisten(sandbox: string, why?: string): Promise<void> {
    const s = this.servers.get(sandbox);
    if (!s) return;
    this.servers.delete(sandbox);
    this.byKey.delete(s.key);
    this.pump?.unserve(s.key, why);
  }

  /** Looks at policies.json while a sandbox is served: a change is applied to open connections too (recheck). */
  private watchPolicies(): void {
    if (this.policyTimer || this.closed) return;
    this.policyTimer = setInterval(() => {
      try {
        this.currentPolicies();
      } catch (err) {
        this.opts.say?.(`the policies could not be read: ${String(err)}`);
      }
    }, POLICY_WATCH_MS);
    this.policyTimer.unref();
  }

  /**
   * The policies changed: every served sandbox's connections allowed before are decided again (their
   * host and port, as they were decided) and those no longer allowed are closed — switched offline, an
   * entry removed, the sandbox gone (issue 35 #11). The pump writes a denied line for each on the
   * sandbox's log; here one line says how many.
   */
  private recheck(): Promise<void> {
    if (this.rechecking) {
      this.recheckAgain = true;
      return this.rechecking;
    }
    const run = async (): Promise<void> => {
      do {
        this.recheckAgain = false;
        const pump = this.pump;
        if (!pump) return;
        for (const [sandbox, s] of [...this.servers]) {
          const open = await pump.tunnels(s.key);
          if (open.length === 0 || this.servers.get(sandbox) !== s) continue;
          const policy = this.currentPolicies().bySandbox[sandbox];
          let cut = 0;
          for (const t of open) {
            const d = this.decide(policy, sandbox, t.host, t.port);
            // A name may reach a host-local or private address only while a CIDR entry covers it (act):
            // removing that entry withdraws the allowance as removing the name would.
            const addrWhy = d.allowed && t.addr ? addressRefusal(d.rules, t.addr, t.port) : null;
            if (d.allowed && !addrWhy) continue;
            pump.cut(t.id, d.reason ?? `${t.addr} is ${addrWhy} and no CIDR entry covers it any more`);
            cut++;
          }
          if (cut > 0) this.opts.say?.(`${sandbox}: closed ${cut} open connection(s) its policy no longer allows (a line each on its log)`);
        }
      } while (this.recheckAgain);
    };
    this.rechecking = run()
      .catch((err: unknown) => this.opts.say?.(`open connections could not be checked again: ${String(err)}`))
      .finally(() => (this.rechecking = null));
    return this.rechecking;
  }

  serving(): string[] {
    return [...this.servers.keys()];
  }

  /**
   * Served, and its socket files are still where the sandbox connects (a removed file takes no
   * connection). A pump being started again still counts: it serves its sandboxes again itself.
   */
  answering(sandbox: string): boolean {
    const s = this.servers.get(sandbox);
    return !!s && existsSync(s.at.socket) && (!s.at.relay || existsSync(s.at.relay));
  }

  /** (Tests) who in sandbox `sandbox` holds the TCP socket src:sport → dst:dport, as a connection's log line would say. */
  async processOf(sandbox: string, src: string, sport: number, dst: string, dport: number): Promise<FoundProcess | null> {
    const s = this.servers.get(sandbox);
    return s && this.pump ? this.pump.lookup(s.key, src, sport, dst, dport) : null;
  }

  /**
   * The policies now (for its decisions, and for the daemon: which sandboxes to serve), and the stamp
   * of the file they were read from (the pump's kept verdicts hold while the file still has it): read
   * again only when the file changed. The stamp comes from the stat before the read, so a change
   * between the two can only make the pump ask again.
   */
  currentPolicies(): { stamp: string; bySandbox: Record<string, NetworkPolicy> } {
    let stamp = 'none';
    try {
      const st = statSync(this.opts.policiesFile, { bigint: true });
      stamp = `${st.ino}:${st.size}:${st.mtimeNs}`;
    } catch {
      // no policies yet
    }
    if (stamp !== this.policies.stamp) {
      const first = this.policies.stamp === '';
      this.policies = { stamp, bySandbox: readPolicies(this.opts.policiesFile) };
      // A change (not the first reading): connections already open are held to it too.
      if (!first) void this.recheck();
    }
    return this.policies;
  }

  private decide(policy: NetworkPolicy | undefined, sandbox: string, host: string, port: number): Decision {
    if (!policy) return { allowed: false, reason: 'the sandbox has no policy here', rules: [] };
    if (policy.mode === 'offline') return { allowed: false, reason: 'the sandbox is offline', rules: [] };
    const rules = this.rulesOf(sandbox, policy);
    if (policy.mode === 'open') return { allowed: true, reason: null, rules };
    if (isAllowed(rules, host, port)) return { allowed: true, reason: null, rules };
    return {
      allowed: false,
      reason: parseIp(host) ? 'raw IP address not covered by a CIDR on the allow list' : 'not on the allow list',
      rules,
    };
  }

  private rulesOf(sandbox: string, policy: NetworkPolicy): AllowRule[] {
    const key = policy.allow.join('\n');
    let cached = this.rulesCache.get(sandbox);
    if (!cached || cached.key !== key) {
      const rules: AllowRule[] = [];
      for (const e of policy.allow) {
        try {
          rules.push(parseAllowEntry(e));
        } catch {
          // Entries are validated before they are stored; one that is not is simply not an allowance.
        }
      }
      cached = { key, rules };
      this.rulesCache.set(sandbox, cached);
    }
    return cached.rules;
  }

  /** A request head from one of a sandbox's connections: decided and answered (the pump logs it first). */
  private onConn(pump: EgressPump, id: string, key: number, raw: Buffer): void {
    this.asked++;
    const sandbox = this.byKey.get(key);
    if (!sandbox) return pump.answer(id, deniedResponse('?', 0, 'the sandbox is no longer served'));
    const head = parseRequestHead(raw.toString('latin1'));
    if (!head)
      return pump.answer(
        id,
        plainResponse(400, 'Bad Request', 'this is an HTTP proxy: send CONNECT host:port or an absolute-form request (http://host/path)\n'),
      );
    // RFC 9112 §3.2: more than one Host is a 400 (the pump, too, never sends such a request on).
    const hosts = head.headers.filter(([k]) => k.toLowerCase() === 'host').length;
    if (hosts > 1)
      return pump.answer(
        id,
        plainResponse(400, 'Bad Request', `the request has ${hosts} Host headers: send exactly one (RFC 9112 section 3.2)\n`),
      );
    if (head.method === 'CONNECT') this.onConnect(pump, sandbox, id, head);
    else this.onRequest(pump, sandbox, id, head);
  }

  private onConnect(pump: EgressPump, sandbox: string, id: string, head: RequestHead): void {
    const dest = splitAuthority(head.target, null);
    if (!dest || !plausibleHost(dest.host)) return pump.answer(id, plainResponse(400, 'Bad Request', 'CONNECT needs host:port\n'));
    const { stamp, bySandbox } = this.currentPolicies();
    const d = this.decide(bySandbox[sandbox], sandbox, dest.host, dest.port);
    // The SNI of a TLS ClientHello must name the host CONNECT named (an address is not checked: a client
    // may name any host to an address it was allowed).
    this.act(pump, sandbox, id, stamp, d, dest.host, dest.port, 'connect', parseIp(dest.host) ? null : dest.host);
  }

  private onRequest(pump: EgressPump, sandbox: string, id: string, head: RequestHead): void {
    const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(head.target)?.[1];
    if (scheme && scheme.toLowerCase() !== 'http')
      return pump.answer(
        id,
        plainResponse(400, 'Bad Request', `only http: requests are proxied as plain HTTP; use CONNECT for ${scheme.toLowerCase()}:\n`),
      );
    /*
     * The authority exactly as sent, read as the pump reads it (it adds the Host header from it, and keeps
     * the verdict under it): host[:port] and nothing else. Userinfo (`other.example:1@host`), a backslash,
     * %-escapes would each be read one way by a URL parser here and another by the pump or the server,
     * and no client needs them in a proxy request (credentials go in an Authorization header).
     */
    const authority = /^http:\/\/([^/?#]*)/.exec(head.target)?.[1];
    if (authority === undefined)
      return pump.answer(id, plainResponse(400, 'Bad Request', 'this is an HTTP proxy: send absolute-form requests (http://host/path)\n'));
    if (authority.includes('@'))
      return pump.answer(
        id,
        plainResponse(400, 'Bad Request', 'the URL carries user:password@ before its host: send credentials in an Authorization header\n'),
      );
    const dest = splitAuthority(authority, 80);
    if (!dest || !plausibleHost(dest.host))
      return pump.answer(id, plainResponse(400, 'Bad Request', `the URL's authority ${JSON.stringify(authority)} is not host[:port]\n`));
    const { host, port } = dest;
    const hostValue = headerOf(head, 'host');
    const hostHeader = hostValue ? splitAuthority(hostValue, 80) : null;
    const { stamp, bySandbox } = this.currentPolicies();
    let d = this.decide(bySandbox[sandbox], sandbox, host, port);
    if (d.allowed && hostValue && (!hostHeader || hostHeader.host.replace(/^\[|\]$/g, '') !== host || hostHeader.port !== port)) {
      d = { allowed: false, reason: `Host header ${hostValue} does not match the request's host`, rules: d.rules };
    }
    this.act(pump, sandbox, id, stamp, d, host, port, 'http', null);
  }

  /**
   * Acts on a decision. Denied: the refusal (after its line). Allowed: the destination is resolved
   * here and the pump dials it (after its line), keeping the verdict for the same request; a name that
   * does not resolve answers 502 (after the allowed line, as the decision was).
   */
  private act(
    pump: EgressPump,
    sandbox: string,
    id: string,
    stamp: string,
    d: Decision,
    host: string,
    port: number,
    kind: 'http' | 'connect',
    sniHost: string | null,
  ): void {
    if (!d.allowed) return pump.answer(id, deniedResponse(host, port, d.reason), { verdict: 'denied', host, port, kind, reason: d.reason });
    const display = `${host.includes(':') ? `[${host}]` : host}:${port}`;
    const timeoutMs = this.opts.connectTimeoutMs ?? 10_000;
    const ip = parseIp(host) !== null;
    const go = (addrs: string[]): void => {
      // The policies changed while the name was resolved: the open connections were checked again without
      // this one, so it is decided again here (a withdrawn allowance must not open a tunnel).
      const now = this.currentPolicies();
      if (now.stamp !== stamp) {
        const again = this.decide(now.bySandbox[sandbox], sandbox, host, port);
        if (!again.allowed)
          return pump.answer(id, deniedResponse(host, port, again.reason), { verdict: 'denied', host, port, kind, reason: again.reason });
        stamp = now.stamp;
      }
      pump.dial(id, {
        kind,
        host,
        port,
        sniHost,
        addrs,
        timeoutMs,
        stamp,
        keepMs: ip ? KEEP_ADDRESS_MS : (this.opts.keepNameMs ?? KEEP_NAME_MS),
      });
    };
    const fail = (why: string): void =>
      pump.answer(id, plainResponse(502, 'Bad Gateway', `could not reach ${display}: ${why}\n`), {
        verdict: 'allowed',
        host,
        port,
        kind,
        reason: null,
      });
    /*
     * Only addresses that are not this machine's or a private network's, unless a CIDR (or IP) entry
     * covers them (host-local.ts): checked here, where the verdict's addresses are chosen, so a kept
     * verdict cannot carry one either. The addresses refused are named on the log, never to the sandbox
     * (it learns no address of this machine's from a name).
     */
    const reachable = (addrs: string[]): void => {
      const refused: string[] = [];
      const ok = addrs.filter((a) => {
        const why = addressRefusal(d.rules, a, port);
        if (why) refused.push(`${a} (${why})`);
        return !why;
      });
      if (ok.length > 0) return go(ok);
      const what = ip ? 'the address is host-local or private' : `${host} resolves only to host-local or private addresses`;
      const how = 'a name reaches such an address only when a CIDR entry of the allow list, ADDRESS/PREFIX, covers it';
      pump.answer(id, deniedResponse(host, port, what, how), {
        verdict: 'denied',
        host,
        port,
        kind,
        reason: `${what}: ${refused.join(', ')}`,
      });
    };
    if (ip) return reachable([host]);
    (this.opts.resolve ?? resolveAll)(host).then(
      (addrs) => (addrs.length > 0 ? reachable(addrs) : fail('no address')),
      (err: unknown) => fail((err as Error).message),
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    if (this.policyTimer) clearInterval(this.policyTimer);
    this.policyTimer = null;
    for (const s of this.servers.keys()) await this.unlisten(s);
    const pump = this.pump ?? (await this.starting?.catch(() => null)) ?? null;
    this.pump = null;
    pump?.dispose();
  }
}

function plainResponse(status: number, text: string, body: string): string {
  return `HTTP/1.1 ${status} ${text}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

function denialText(host: string, port: number, reason: string | null, how?: string): string {
  return `Sandbox Desk denied ${host}:${port}: ${reason ?? 'not allowed'} (${how ?? `allow it with \`sandbox-desk sandbox network NAME --allow ${host}\``})`;
}

function deniedResponse(host: string, port: number, reason: string | null, how?: string): string {
  const body = `${denialText(host, port, reason, how)}\n`;
  return `HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nX-Sandbox-Desk-Denied: 1\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}
