/**
 * The egress proxy: the only way out of a sandbox whose policy is `allow`. One HTTP proxy server per
 * sandbox, each on its own Unix sockets (so a connection's sandbox is known from where it arrived, and
 * nothing listens on a TCP port of this machine): `proxy.sock` takes connections as they are (QEMU's
 * guestfwd), `relay.sock` the link of a docker sandbox's relay, which passes over it the listening
 * socket of the sandbox's proxy address, so the proxy accepts the sandbox's TCP connections itself
 * (egress-relay-script.ts, through the helper: splice-pump.ts). It speaks HTTP
 * CONNECT (HTTPS and any TCP tunnel) and plain HTTP (absolute-form requests), and checks the destination against the sandbox's allow list
 * before it opens anything: the CONNECT authority, the request's URL host and its Host header (they
 * must agree), and for TLS the ClientHello's SNI against the CONNECT host (no domain fronting).
 *
 * Why by hand, on node:net: the npm proxies we looked at (http-proxy, proxy-chain) are built for
 * forwarding, not for deciding; the allow-list hook, the SNI check and the per-sandbox log are the whole
 * job here. Only the request head is parsed (http-head.ts); once a connection is allowed its bytes are
 * piped raw both ways (a plain-HTTP request goes upstream in origin form with `Connection: close`, so
 * one client connection is one decided request). node:http on the data path cost most of the proxy's
 * time per byte (bench/network.ts). Names are resolved on this side (the sandbox needs no DNS for
 * proxied traffic).
 *
 * A connection that turns out to be bulk (HANDOFF_BYTES either way) is handed to the splice pump
 * (splice-pump.ts) once it has been decided, logged and checked: the pump moves the rest of its bytes
 * in the kernel. Short requests never reach the pump (no round trip to it on their path).
 *
 * The process behind a connection (issue 17: "process where known") comes from `processOf`, given the
 * sandbox-side address and port: the accepted socket's own peer, or a PROXY line (proxy-protocol.ts).
 * It runs beside the request (the request is decided and sent on without it); the destination's answer is passed on once it is
 * done (bounded: answerAfterLookup), and log lines wait for it but are written in decision order.
 */
import net from 'node:net';
import { chmodSync, existsSync, rmSync } from 'node:fs';
import {
  isAllowed,
  parseAllowEntry,
  parseIp,
  type AllowRule,
  type NetworkLogEntry,
  type NetworkPolicy,
} from '../../shared/network-policy.js';
import { sniOf } from './tls-sni.js';
import { readProxyLine, type ProxySource } from './proxy-protocol.js';
import { headerOf, readRequestHead, type RequestHead } from './http-head.js';

export interface EgressProxyOptions {
  /** The policy in force now, read on every connection (a change takes effect on the next one). */
  policyOf(sandbox: string): NetworkPolicy | null;
  /** Called once per connection decided (allowed or denied). */
  log(entry: NetworkLogEntry): void;
  /** Gives up connecting to a destination after this long (default 10 s): nothing hangs. */
  connectTimeoutMs?: number;
  /** Best effort, bounded by the caller: who in the sandbox opened the connection from `source`. */
  processOf?(sandbox: string, source: ProxySource): Promise<ConnectionProcess | null>;
  /** The proxy's own messages (the daemon's proxy.log): what a user must know that no log line shows. */
  say?(message: string): void;
  /** Where bulk connections' bytes go (splice-pump.ts); without it the proxy pipes every byte itself. */
  pump?: BulkPump;
  /** After this many bytes (either way) a connection is handed to `pump` (default HANDOFF_BYTES). */
  handoffBytes?: number;
}

/** What the proxy needs of its helper process (splice-pump.ts). */
export interface BulkPump {
  prepare?(): void;
  ready(): boolean;
  take(client: net.Socket, upstream: net.Socket, toClient: Buffer, toUpstream: Buffer): boolean;
  /** Takes a relay's link; the sandbox connections accepted on the listener it passes arrive at `onRelayed`. false: it was closed. */
  adopt?(sandbox: string, relay: net.Socket): boolean;
  /** Closes the relay links of a sandbox no longer served. */
  drop?(sandbox: string): void;
  onRelayed?: ((sandbox: string, client: net.Socket) => void) | null;
}

/**
 * Half a megabyte: far past any small request and response (they stay on the proxy, with no round trip
 * to the pump), and 0.5 % of the benchmark's 100 MiB download.
 */
export const HANDOFF_BYTES = 512 * 1024;

type Handle = { reading?: boolean; readStop?: () => number };

/**
 * Stops the socket's reads at the source (libuv), which pause() does not: a paused net.Socket still
 * reads up to its highWaterMark, and a read after the handle is passed would be lost (Node's send()
 * only swaps its callback for a no-op). `reading = false` as net.Socket.pause does for its own, so a
 * later resume() starts reading again. Reaches into _handle: there is no public way to do this.
 */
function stopReading(s: net.Socket): void {
  const h = (s as unknown as { _handle?: Handle | null })._handle;
  if (h?.readStop) {
    h.reading = false;
    h.readStop();
  }
}

/** Both ways open: nothing ended, nothing destroyed. */
function fullyOpen(s: net.Socket): boolean {
  return !s.destroyed && s.readyState === 'open' && !s.readableEnded && !s.writableEnded;
}

/** Resolves when every byte given to `s` so far is written (an empty write completes after all before it). */
function flushed(s: net.Socket): Promise<void> {
  if (s.writableLength === 0) return Promise.resolve();
  return new Promise((resolve) => s.write(Buffer.alloc(0), () => resolve()));
}

/** What `s` has read and not yet given to anyone (reading stays stopped). */
function takeBuffered(s: net.Socket): Buffer {
  const chunks: Buffer[] = [];
  for (let c = s.read() as Buffer | null; c !== null; c = s.read() as Buffer | null) chunks.push(c);
  // read() on an empty buffer asks libuv to read again; nothing is read before this same tick ends.
  stopReading(s);
  return Buffer.concat(chunks);
}

/** What `processOf` finds: the process as the log shows it, and its pid ancestry inside the sandbox. */
export interface ConnectionProcess {
  process: string;
  pid: number;
  ancestry: number[];
}

interface Decision {
  allowed: boolean;
  reason: string | null;
}

/** Parses `host:port` / `[v6]:port` as CONNECT carries it. */
export function splitAuthority(authority: string, defaultPort: number | null): { host: string; port: number } | null {
  const m = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(authority) ?? /^([^:[\]]+)(?::(\d{1,5}))?$/.exec(authority);
  if (!m) return null;
  const port = m[2] !== undefined ? Number(m[2]) : defaultPort;
  if (port === null || port < 1 || port > 65535) return null;
  return { host: m[1]!.toLowerCase().replace(/\.$/, ''), port };
}

/** The longest a refusal waits for its log line (the process lookup is bounded longer; see refuse). */
const DENY_LOG_WAIT_MS = 300;
/** The longest an allowed connection's answer waits for its process lookup (see answerAfterLookup). */
const ANSWER_WAIT_MS = 300;

export class EgressProxy {
  private readonly servers = new Map<string, { server: net.Server; path: string; relay: { server: net.Server; path: string } | null }>();
  private readonly sockets = new Set<net.Socket>();
  private readonly rulesCache = new Map<string, { key: string; rules: AllowRule[] }>();
  /** The process lookup of each connection, started when it arrived. */
  private readonly lookups = new WeakMap<net.Socket, Promise<ConnectionProcess | null>>();
  /**
   * Clients whose bytes are piped on: for CONNECT, only after the first chunk passed the SNI check.
   * Only these may be handed to the pump (which checks nothing).
   */
  private readonly checked = new WeakSet<net.Socket>();
  /** Per sandbox, the last log line's write: lines wait for their process lookup but keep their order. */
  private readonly logChain = new Map<string, Promise<void>>();

  constructor(private readonly opts: EgressProxyOptions) {
    if (opts.pump) opts.pump.onRelayed = (sandbox, client) => this.relayed(sandbox, client);
  }

  /**
   * A sandbox connection, accepted on the listener its relay passed (through the helper): the
   * sandbox's own TCP socket. Its peer is the sandbox-side address and port and its local end the
   * proxy address in the sandbox's namespace, which is the 4-tuple the process lookup needs; nothing
   * the sandbox sent says so.
   */
  private relayed(sandbox: string, client: net.Socket): void {
    if (!this.servers.get(sandbox)?.relay) return void client.destroy();
    // A client's EOF must leave the answer's way open (half-close).
    client.allowHalfOpen = true;
    client.setNoDelay(true);
    this.track(client);
    const source =
      client.remoteAddress && client.remotePort && client.localAddress && client.localPort
        ? { ip: client.remoteAddress, port: client.remotePort, dstIp: client.localAddress, dstPort: client.localPort }
        : null;
    this.serve(sandbox, client, source);
  }

  private decide(sandbox: string, host: string, port: number): Decision {
    const policy = this.opts.policyOf(sandbox);
    if (!policy) return { allowed: false, reason: 'the sandbox has no policy here' };
    if (policy.mode === 'offline') return { allowed: false, reason: 'the sandbox is offline' };
    if (policy.mode === 'open') return { allowed: true, reason: null };
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
    if (isAllowed(cached.rules, host, port)) return { allowed: true, reason: null };
    return { allowed: false, reason: parseIp(host) ? 'raw IP address not covered by a CIDR on the allow list' : 'not on the allow list' };
  }

  /** Logs a decision; resolves when its line is written (it may wait for the process lookup). */
  private record(
    sandbox: string,
    host: string,
    port: number,
    kind: NetworkLogEntry['kind'],
    d: Decision,
    client: net.Socket,
  ): Promise<void> {
    const entry: NetworkLogEntry = {
      at: new Date().toISOString(),
      sandbox,
      host,
      port,
      verdict: d.allowed ? 'allowed' : 'denied',
      kind,
      reason: d.reason,
      process: null,
    };
    const write = (): void => {
      try {
        this.opts.log(entry);
      } catch {
        // A log that cannot be written must not take the connection's decision with it.
      }
    };
    const found = this.lookups.get(client);
    if (!found) {
      const pending = this.logChain.get(sandbox);
      if (!pending) {
        write();
        return Promise.resolve();
      }
      return this.chain(sandbox, pending.then(write));
    }
    const lookup = found.then(
      (p) => {
        if (!p) return;
        entry.process = p.process;
        entry.pid = p.pid;
        entry.ancestry = p.ancestry;
      },
      () => undefined,
    );
    return this.chain(sandbox, (this.logChain.get(sandbox) ?? Promise.resolve()).then(() => lookup).then(write));
  }

  private chain(sandbox: string, p: Promise<void>): Promise<void> {
    this.logChain.set(sandbox, p);
    void p.then(() => {
      if (this.logChain.get(sandbox) === p) this.logChain.delete(sandbox);
    });
    return p;
  }

  /**
   * A refusal is sent once its line is on the log (at most DENY_LOG_WAIT_MS later): the client's next
   * look at the log finds it, and the process lookup still sees the client's socket. Only refusals
   * wait — an allowed connection never does.
   */
  private refuse(logged: Promise<void>, client: net.Socket, answer: string): void {
    void Promise.race([logged, new Promise<void>((r) => setTimeout(r, DENY_LOG_WAIT_MS).unref())]).then(() => client.end(answer));
  }

  /** Resolves when every log line decided so far is written (tests, shutdown). */
  async flushLog(): Promise<void> {
    await Promise.all([...this.logChain.values()]);
  }

  /**
   * Serves one sandbox on a Unix socket that takes connections as they are (QEMU's guestfwd, tests;
   * a PROXY line first is read), and — with `relayPath` and a helper — on the socket its docker relay
   * passes its listener over (egress-relay-script.ts). Both 0666, replaced if stale.
   */
  async listen(sandbox: string, socketPath: string, relayPath?: string): Promise<void> {
    if (this.servers.has(sandbox)) return;
    // Half-open: a client's EOF must not cut its answer short (Node ends our side on it otherwise).
    const server = net.createServer({ allowHalfOpen: true }, (s) => {
      this.track(s);
      // A PROXY line comes first if there is one (proxy-protocol.ts), then one request head.
      readProxyLine(s, (source) => this.serve(sandbox, s, source));
    });
    const pump = this.opts.pump;
    // Never read here: a byte Node read off a relay's link would lose the descriptor that came with it.
    const relay =
      relayPath && pump?.adopt
        ? net.createServer({ pauseOnConnect: true }, (link) => {
            link.on('error', () => undefined);
            if (!pump.adopt!(sandbox, link))
              this.opts.say?.(`${sandbox}: the egress helper (python3) cannot run: the sandbox has no network (fails closed)`);
          })
        : null;
    // The relay's socket first: once proxy.sock exists the supervisor counts the sandbox as served.
    if (relay) await listenOn(relay, relayPath!);
    await listenOn(server, socketPath);
    pump?.prepare?.();
    this.servers.set(sandbox, { server, path: socketPath, relay: relay ? { server: relay, path: relayPath! } : null });
  }

  /** Closed with the proxy; an error ends the connection alone. */
  private track(s: net.Socket): void {
    this.sockets.add(s);
    s.on('close', () => this.sockets.delete(s));
    s.on('error', () => undefined);
  }

  /** One connection from a sandbox: its process lookup starts, then its request head is read and decided. */
  private serve(sandbox: string, s: net.Socket, source: ProxySource | null): void {
    // The process lookup starts now, before the head is even read: the sooner, the likelier the
    // client still holds the socket (see processOf).
    const lookup = source && this.opts.processOf ? this.opts.processOf(sandbox, source).catch(() => null) : null;
    if (lookup) this.lookups.set(s, lookup);
    readRequestHead(s, (head, rest, why) => {
      if (!head) {
        if (why === 'too-large') s.end(plainResponse(431, 'Request Header Fields Too Large', 'the request head is too large\n'));
        else if (why === 'bad')
          s.end(
            plainResponse(
              400,
              'Bad Request',
              'this is an HTTP proxy: send CONNECT host:port or an absolute-form request (http://host/path)\n',
            ),
          );
        else s.destroy();
        return;
      }
      if (head.method === 'CONNECT') this.onConnect(sandbox, head, s, rest);
      else this.onRequest(sandbox, head, s, rest);
    });
  }

  /** Stops serving a sandbox (its socket is removed: its relay then fails closed). */
  async unlisten(sandbox: string): Promise<void> {
    const s = this.servers.get(sandbox);
    if (!s) return;
    this.servers.delete(sandbox);
    this.opts.pump?.drop?.(sandbox);
    for (const one of [s, s.relay]) {
      if (!one) continue;
      await new Promise<void>((resolve) => one.server.close(() => resolve()));
      rmSync(one.path, { force: true });
    }
  }

  serving(): string[] {
    return [...this.servers.keys()];
  }

  /** Served, and its socket files are still where the sandbox connects (a removed file takes no connection). */
  answering(sandbox: string): boolean {
    const s = this.servers.get(sandbox);
    return !!s && existsSync(s.path) && (!s.relay || existsSync(s.relay.path));
  }

  /**
   * Opens the allowed destination; `established` runs once it is connected (then the bytes are the
   * caller's to pipe), a failure before that answers 502. Nothing hangs: the connect has a timeout.
   */
  private dial(client: net.Socket, host: string, port: number, established: (upstream: net.Socket) => void): void {
    // Half-open too: a destination that has said everything and shut its side (a server-first
    // protocol, a short answer) must still get the rest of what the client sends.
    const upstream = net.connect({ host: host.replace(/^\[|\]$/g, ''), port, noDelay: true, allowHalfOpen: true });
    this.sockets.add(upstream);
    let up = false;
    upstream.setTimeout(this.opts.connectTimeoutMs ?? 10_000, () => upstream.destroy(new Error('connect timeout')));
    upstream.on('error', (err) => {
      if (!up && client.writable) client.end(plainResponse(502, 'Bad Gateway', `could not reach ${host}:${port}: ${err.message}\n`));
      else client.destroy();
    });
    upstream.on('close', (hadError: boolean) => {
      this.sockets.delete(upstream);
      // A clean end reaches the client through the pipe (end after the last byte); destroying it here
      // would drop what is still queued for a slow client.
      if (up && (hadError || !upstream.readableEnded)) client.destroy();
    });
    client.on('close', () => upstream.destroy());
    upstream.once('connect', () => {
      upstream.setTimeout(0);
      up = true;
      established(upstream);
    });
  }

  /**
   * Starts the destination's bytes toward the client once the connection's process lookup is done
   * (at most ANSWER_WAIT_MS): a client holds its socket until it has its answer, so the lookup — which
   * now runs beside the request instead of before it — still finds the socket. It started when the
   * connection arrived, so it is usually done before the destination has answered.
   */
  private answerAfterLookup(client: net.Socket, upstream: net.Socket): void {
    const start = (): void => {
      if (client.destroyed || upstream.destroyed) return;
      upstream.pipe(client);
      // Only now: a 'data' listener on the destination before its pipe would take bytes from the client.
      this.watchBulk(client, upstream);
    };
    const lookup = this.lookups.get(client);
    if (!lookup) return start();
    void Promise.race([lookup, new Promise<void>((r) => setTimeout(r, ANSWER_WAIT_MS).unref())]).then(start);
  }

  /**
   * Counts an allowed connection's bytes; at HANDOFF_BYTES it goes to the pump (when there is one).
   * Called once the destination is piped to the client; the client's bytes always have their reader
   * (the pipe, or the SNI check's first-chunk listener, which was added before this one).
   */
  private watchBulk(client: net.Socket, upstream: net.Socket): void {
    const pump = this.opts.pump;
    if (!pump) return;
    const limit = this.opts.handoffBytes ?? HANDOFF_BYTES;
    let seen = 0;
    const count = (chunk: Buffer): void => {
      seen += chunk.length;
      if (seen < limit || !pump.ready() || !this.checked.has(client)) return;
      client.off('data', count);
      upstream.off('data', count);
      this.handOff(client, upstream, pump);
    };
    client.on('data', count);
    upstream.on('data', count);
  }

  /**
   * Stops both sockets reading, lets what they were given finish writing, then passes both to the
   * pump with whatever they had read and not yet passed on (the pump writes that first), so no byte is
   * lost or reordered. If anything ended meanwhile, or the pump is gone, the proxy keeps piping.
   */
  private handOff(client: net.Socket, upstream: net.Socket, pump: BulkPump): void {
    if (!fullyOpen(client) || !fullyOpen(upstream)) return;
    client.unpipe(upstream);
    upstream.unpipe(client);
    stopReading(client);
    stopReading(upstream);
    void Promise.all([flushed(client), flushed(upstream)]).then(() => {
      if (client.destroyed || upstream.destroyed) return;
      const toClient = takeBuffered(upstream);
      const toUpstream = takeBuffered(client);
      if (fullyOpen(client) && fullyOpen(upstream) && pump.take(client, upstream, toClient, toUpstream)) {
        // Node closes its copies once the pump has them; these objects are done.
        for (const s of [client, upstream]) {
          this.sockets.delete(s);
          s.removeAllListeners();
          s.on('error', () => undefined);
        }
        return;
      }
      if (toClient.length > 0) upstream.unshift(toClient);
      if (toUpstream.length > 0) client.unshift(toUpstream);
      upstream.pipe(client);
      client.pipe(upstream);
    });
  }

  private onConnect(sandbox: string, head: RequestHead, client: net.Socket, rest: Buffer): void {
    const dest = splitAuthority(head.target, null);
    if (!dest) {
      client.end(plainResponse(400, 'Bad Request', 'CONNECT needs host:port\n'));
      return;
    }
    const d = this.decide(sandbox, dest.host, dest.port);
    if (!d.allowed) {
      this.refuse(this.record(sandbox, dest.host, dest.port, 'connect', d, client), client, deniedResponse(dest.host, dest.port, d.reason));
      return;
    }
    void this.record(sandbox, dest.host, dest.port, 'connect', d, client);
    this.dial(client, dest.host, dest.port, (upstream) => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      // The SNI of a TLS ClientHello must name the host CONNECT named: the first bytes are looked at
      // before anything reaches the destination.
      const onFirst = (first: Buffer): void => {
        const sni = first.length > 0 && first[0] === 0x16 ? sniOf(first) : null;
        if (sni !== null && sni.toLowerCase() !== dest.host && !parseIp(dest.host)) {
          void this.record(
            sandbox,
            dest.host,
            dest.port,
            'connect',
            { allowed: false, reason: `TLS SNI ${sni} does not match the CONNECT host` },
            client,
          );
          client.destroy();
          return;
        }
        if (first.length > 0) upstream.write(first);
        client.pipe(upstream);
        this.checked.add(client);
        client.resume();
      };
      // Server-first protocols: the destination's bytes flow to the client without waiting for the client's.
      this.answerAfterLookup(client, upstream);
      if (rest.length > 0) onFirst(rest);
      else {
        client.once('data', (chunk: Buffer) => {
          client.pause();
          onFirst(chunk);
        });
        client.resume();
      }
    });
  }

  private onRequest(sandbox: string, head: RequestHead, client: net.Socket, rest: Buffer): void {
    let url: URL;
    try {
      url = new URL(head.target);
    } catch {
      client.end(plainResponse(400, 'Bad Request', 'this is an HTTP proxy: send absolute-form requests (http://host/path)\n'));
      return;
    }
    if (url.protocol !== 'http:') {
      client.end(plainResponse(400, 'Bad Request', `only http: requests are proxied as plain HTTP; use CONNECT for ${url.protocol}\n`));
      return;
    }
    const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    const port = url.port ? Number(url.port) : 80;
    const hostValue = headerOf(head, 'host');
    const hostHeader = hostValue ? splitAuthority(hostValue, 80) : null;
    let d = this.decide(sandbox, host, port);
    if (d.allowed && hostValue && (!hostHeader || hostHeader.host.replace(/^\[|\]$/g, '') !== host || hostHeader.port !== port)) {
      d = { allowed: false, reason: `Host header ${hostValue} does not match the request's host` };
    }
    const logged = this.record(sandbox, host, port, 'http', d, client);
    if (!d.allowed) {
      this.refuse(logged, client, deniedResponse(host, port, d.reason));
      return;
    }
    // Origin form upstream, without the proxy's own headers; one request per connection.
    const drop = new Set(['proxy-connection', 'proxy-authorization', 'connection', 'keep-alive']);
    const lines = [`${head.method} ${url.pathname}${url.search} ${head.version}`];
    for (const [k, v] of head.headers) if (!drop.has(k.toLowerCase())) lines.push(`${k}: ${v}`);
    if (!hostValue) lines.push(`Host: ${url.host}`);
    lines.push('Connection: close', '', '');
    this.dial(client, host, port, (upstream) => {
      upstream.write(Buffer.concat([Buffer.from(lines.join('\r\n'), 'latin1'), rest]));
      this.answerAfterLookup(client, upstream);
      client.pipe(upstream);
      this.checked.add(client);
      client.resume();
    });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await Promise.all([...this.servers.keys()].map((k) => this.unlisten(k)));
  }
}

/** Listens on a Unix socket path (a stale one replaced) that the relay, as root of its container, may connect to. */
async function listenOn(server: net.Server, path: string): Promise<void> {
  rmSync(path, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // The relay connects as root of its own container, which is not this machine's root.
  chmodSync(path, 0o666);
}

function plainResponse(status: number, text: string, body: string): string {
  return `HTTP/1.1 ${status} ${text}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

function denialText(host: string, port: number, reason: string | null): string {
  return `Sandbox Desk denied ${host}:${port}: ${reason ?? 'not allowed'} (allow it with \`sandbox-desk sandbox network NAME --allow ${host}\`)`;
}

function deniedResponse(host: string, port: number, reason: string | null): string {
  const body = `${denialText(host, port, reason)}\n`;
  return `HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nX-Sandbox-Desk-Denied: 1\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}
