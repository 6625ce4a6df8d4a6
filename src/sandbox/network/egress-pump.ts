/**
 * The egress proxy's compiled data path (src/sandbox/network/pump/, "the pump"), driven from Node:
 * where its binary is, how it is started, and its line protocol (described at the top of pump/main.c).
 * The pump holds every socket a sandbox connects to, moves the bytes and writes the sandbox's
 * connection log; for each request head it has no kept verdict for, it asks `conn` and is answered with
 * `dial` or `answer`. Decisions stay in Node (egress-proxy.ts).
 *
 * The binary is built from the C sources by `npm run build` (scripts/build-native.mjs) into
 * dist/native/; `pumpBinary()` finds it from the sources (tests, `tsx`) and from the built code, in
 * the packaged app too (outside the asar archive: a program cannot run from inside it).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The pump's binary, or null when it has not been built. SANDBOX_DESK_EGRESS_PUMP names another (tests, packagers). */
export function pumpBinary(): string | null {
  const override = process.env.SANDBOX_DESK_EGRESS_PUMP;
  if (override) return existsSync(override) ? override : null;
  // src/sandbox/network/ → dist/native/ (sources), dist/src/sandbox/network/ → dist/native/ (built).
  for (const rel of ['../../../dist/native/egress-pump', '../../../native/egress-pump']) {
    const p = fileURLToPath(new URL(rel, import.meta.url)).replace(/([/\\])app\.asar([/\\])/, '$1app.asar.unpacked$2');
    if (existsSync(p)) return p;
  }
  return null;
}

/** What to do when the pump has not been built. */
export const PUMP_MISSING =
  'the egress proxy’s data path (dist/native/egress-pump) is not built: run `npm run build` (a C compiler is needed: `npm run setup` installs one)';

/** The process behind a connection, as the pump finds it and the log shows it (tests ask with `lookup`). */
export interface FoundProcess {
  /** This machine's pid. */
  hostPid: number;
  /** e.g. `curl (pid 42): curl -s http://…` */
  process: string;
  /** The pid as the sandbox sees it. */
  pid: number;
  /** Sandbox pids, parent first, up to the sandbox's init. */
  ancestry: number[];
}

export interface PumpEvents {
  /** A request head (without its blank line) the pump has no kept verdict for: answer with `dial` or `answer`. */
  conn(id: string, key: number, head: Buffer): void;
  /** What the pump wants on the proxy's log. */
  say(message: string): void;
  /** The pump is gone (every connection and listener with it). */
  exit(why: string): void;
}

/** Where a sandbox is served: its Unix sockets and its connection log. */
export interface ServedAt {
  /** Connections as they are (QEMU's guestfwd, tests). */
  socket: string;
  /** A docker sandbox's relay links (egress-relay-script.ts), or none. */
  relay?: string;
  /** The sandbox's connection log (network-files.ts logFileOf), written by the pump. */
  log: string;
}

/**
 * What one sandbox may hold in the pump at once, so that one cannot starve the others (issue 35 #9):
 * open connections, pending request heads (not yet decided) and the bytes those hold. Past one, a new
 * connection is answered 503 and closed, and the proxy's log says which limit.
 */
export interface PumpLimits {
  connections: number;
  heads: number;
  headBytes: number;
}
export const DEFAULT_PUMP_LIMITS: PumpLimits = { connections: 256, heads: 64, headBytes: 4 * 1024 * 1024 };

/** A connection the pump dialled or relays on an allowed verdict (`tunnels`): decided again when the policies change. */
export interface OpenTunnel {
  id: string;
  kind: 'http' | 'connect';
  host: string;
  port: number;
  /** The address dialled (null before the dial): an allowance for a private or host-local address is a CIDR's. */
  addr: string | null;
}

const SERVE_WAIT_MS = 5_000;
const hex = (s: string): string => Buffer.from(s, 'utf8').toString('hex') || '-';

export class EgressPump {
  private child: ChildProcessWithoutNullStreams | null = null;
  private buffered = '';
  private readonly serving = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
  private readonly lookups: Array<(proc: FoundProcess | null) => void> = [];
  private readonly tunnelAsks = new Map<number, Array<(t: OpenTunnel[]) => void>>();
  /** Commands not yet written: all those one chunk of the pump's lines gave rise to go in one write (one wake-up of the pump). */
  private outgoing: string[] = [];

  constructor(
    private readonly binary: string,
    private readonly on: PumpEvents,
  ) {}

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** Starts the pump with where the policies are (its kept verdicts hold while that file is unchanged); resolves once it is ready. */
  start(policiesFile: string, logMaxBytes: number, limits: PumpLimits = DEFAULT_PUMP_LIMITS): Promise<void> {
    const child = spawn(this.binary, [], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child = child;
    const l = [limits.connections, limits.heads, limits.headBytes].map((n) => Math.max(0, Math.trunc(n)));
    this.send(`config ${hex(policiesFile)} ${Math.trunc(logMaxBytes)} ${l.join(' ')}`);
    return new Promise((resolve, reject) => {
      let ready = false;
      const gone = (why: string): void => {
        if (this.child !== child) return;
        this.child = null;
        for (const w of this.serving.values()) w.reject(new Error(`the egress pump exited: ${why}`));
        this.serving.clear();
        for (const l of this.lookups.splice(0)) l(null);
        this.endTunnelAsks();
        if (!ready) reject(new Error(`the egress pump did not start: ${why}`));
        else this.on.exit(why);
      };
      child.on('error', (e) => gone(e.message));
      child.on('exit', (code, signal) => gone(signal ? `killed by ${signal}` : `exit code ${code}`));
      child.stdin.on('error', () => undefined);
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (d: string) => this.on.say(`egress pump: ${d.trim()}`));
      // UTF-8: every field is hex or ASCII but a `say` (paths) and a `found` (process names, raw UTF-8 inside JSON).
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk: string) => {
        this.buffered += chunk;
        for (let nl = this.buffered.indexOf('\n'); nl >= 0; nl = this.buffered.indexOf('\n')) {
          const line = this.buffered.slice(0, nl);
          this.buffered = this.buffered.slice(nl + 1);
          if (line === 'ready') {
            ready = true;
            resolve();
            continue;
          }
          try {
            this.line(line);
          } catch (err) {
            // One line the proxy could not take must not take the proxy (and every sandbox's way out) with it.
            this.on.say(`egress pump: a line could not be handled: ${String(err)}`);
          }
        }
      });
    });
  }

  private line(line: string): void {
    const f = line.split(' ');
    switch (f[0]) {
      case 'conn':
        if (f.length === 4) this.on.conn(f[1]!, Number(f[2]), Buffer.from(f[3]!, 'hex'));
        return;
      case 'served':
      case 'unserved': {
        const w = this.serving.get(Number(f[1]));
        this.serving.delete(Number(f[1]));
        if (f[0] === 'served') w?.resolve();
        else w?.reject(new Error(Buffer.from(f[2] ?? '', 'hex').toString('utf8')));
        return;
      }
      case 'found': {
        const json = line.slice('found '.length);
        this.lookups.shift()?.(json === '-' ? null : (JSON.parse(json) as FoundProcess));
        return;
      }
      case 'say':
        this.on.say(`egress pump: ${line.slice(4)}`);
        return;
      case 'tunnels': {
        const tunnels: OpenTunnel[] = [];
        for (const t of f.slice(2)) {
          const [id, kind, port, host, addr] = t.split(',');
          if (id && (kind === 'http' || kind === 'connect') && host)
            tunnels.push({ id, kind, host, port: Number(port), addr: addr && addr !== '-' ? addr : null });
        }
        this.tunnelAsks.get(Number(f[1]))?.shift()?.(tunnels);
        return;
      }
    }
  }

  private send(line: string): void {
    if (!this.child) return;
    this.outgoing.push(line);
    if (this.outgoing.length === 1) queueMicrotask(() => this.flush());
  }

  private flush(): void {
    const lines = this.outgoing;
    this.outgoing = [];
    if (lines.length > 0) this.child?.stdin.write(`${lines.join('\n')}\n`);
  }

  /** Listens for sandbox `key` (named `sandbox` on its log) on its Unix sockets (replaced if stale, 0666). */
  serve(key: number, sandbox: string, at: ServedAt): Promise<void> {
    if (!this.child) return Promise.reject(new Error('the egress pump is not running'));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.serving.delete(key);
        reject(new Error('the egress pump did not answer'));
      }, SERVE_WAIT_MS);
      const done = (): void => clearTimeout(timer);
      this.serving.set(key, {
        resolve: () => (done(), resolve()),
        reject: (e) => (done(), reject(e)),
      });
      this.send(`serve ${key} ${hex(at.socket)} ${at.relay ? hex(at.relay) : '-'} ${hex(at.log)} ${hex(sandbox)}`);
    });
  }

  /**
   * Stops listening for `key`: its sockets removed, its relay links closed (its address refuses: fails
   * closed), its connections closed, each open one with a line on its log giving `why`.
   */
  unserve(key: number, why?: string): void {
    this.send(why ? `unserve ${key} ${hex(why)}` : `unserve ${key}`);
  }

  /** Sandbox `key`'s connections allowed and not finished (dialling or open), each as it was decided. */
  tunnels(key: number): Promise<OpenTunnel[]> {
    if (!this.child) return Promise.resolve([]);
    return new Promise((resolve) => {
      const asks = this.tunnelAsks.get(key) ?? [];
      asks.push(resolve);
      this.tunnelAsks.set(key, asks);
      this.send(`tunnels ${key}`);
    });
  }

  /** Closes a connection the policy no longer allows; its log gets a denied line "open connection closed: `why`". */
  cut(id: string, why: string): void {
    if (/^\d+$/.test(id)) this.send(`cut ${id} ${hex(why)}`);
  }

  private endTunnelAsks(): void {
    for (const asks of this.tunnelAsks.values()) for (const a of asks) a([]);
    this.tunnelAsks.clear();
  }

  /**
   * Allowed: the pump writes the connection's line, then dials `addrs` in turn (at most `timeoutMs`)
   * and, for `http`, sends the request in origin form; for `connect` answers 200 and checks a TLS
   * ClientHello's name against `sniHost` (null: not checked). Unreachable: 502. With `keepMs`, the
   * verdict is kept that long for the same request, while policies.json is still as `stamp` says.
   */
  dial(
    id: string,
    o: {
      kind: 'http' | 'connect';
      host: string;
      port: number;
      sniHost: string | null;
      addrs: string[];
      timeoutMs: number;
      stamp: string;
      keepMs: number;
    },
  ): void {
    const addrs = o.addrs.filter((a) => /^[0-9a-fA-F:.]+$/.test(a)).join(',');
    const sni = o.sniHost && /^[^\s,]+$/.test(o.sniHost) ? o.sniHost : '-';
    this.send(
      `dial ${id} ${o.kind} ${o.host} ${o.port} ${sni} ${addrs || '-'} ${Math.trunc(o.timeoutMs)} ${o.stamp} ${Math.trunc(o.keepMs)}`,
    );
  }

  /**
   * Answers the connection with `response` and closes it once the client has finished sending; with a
   * `verdict`, the connection's line goes on the log first.
   */
  answer(
    id: string,
    response: string,
    line?: { verdict: 'allowed' | 'denied'; host: string; port: number; kind: 'http' | 'connect'; reason: string | null },
  ): void {
    const l = line ? `${line.verdict} ${line.host} ${line.port} ${line.kind} ${line.reason ? hex(line.reason) : '-'}` : '- - 0 - -';
    this.send(`answer ${id} ${l} ${Buffer.from(response, 'utf8').toString('hex')}`);
  }

  /** (Tests) the process behind a TCP connection of sandbox `key`, as the pump finds it for a connection it accepts. */
  lookup(key: number, src: string, sport: number, dst: string, dport: number): Promise<FoundProcess | null> {
    if (!this.child) return Promise.resolve(null);
    return new Promise((resolve) => {
      this.lookups.push(resolve);
      this.send(`lookup ${key} ${src} ${sport} ${dst} ${dport}`);
    });
  }

  dispose(): void {
    const c = this.child;
    this.child = null;
    for (const w of this.serving.values()) w.reject(new Error('the egress pump was stopped'));
    this.serving.clear();
    for (const l of this.lookups.splice(0)) l(null);
    this.endTunnelAsks();
    c?.kill('SIGKILL');
  }
}
