/**
 * The egress proxy's compiled data path (egress-pump.c), driven from Node: where its binary is, how it
 * is started, and its line protocol (described at the top of the C file). The pump holds every socket
 * a sandbox connects to and moves the bytes; it asks `onConn` for a verdict on each request head and
 * is answered with `dial` or `refuse`. Decisions stay in Node (egress-proxy.ts).
 *
 * The binary is built from the C source by `npm run build` (scripts/build-native.mjs) into
 * dist/native/; `pumpBinary()` finds it from the sources (tests, `tsx`) and from the built code, in
 * the packaged app too (outside the asar archive: a program cannot run from inside it).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The pump's binary, or null when it has not been built. */
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

/** The process the pump found behind a connection (its protocol's PROC field). */
export interface FoundProcess {
  /** This machine's pid. */
  hostPid: number;
  /** The pid as the sandbox sees it. */
  pid: number;
  /** Sandbox pids, parent first, up to the sandbox's init. */
  ancestry: number[];
  comm: string;
  /** NUL-separated, as /proc has it. */
  cmdline: string;
}

/** Parses PROC: `-`, or HOSTPID,NSPID,ANCESTRY(a.b.c | -),COMM_HEX,CMDLINE_HEX. */
export function parseFound(field: string): FoundProcess | null {
  const f = field.split(',');
  if (f.length !== 5) return null;
  const hostPid = Number(f[0]);
  const pid = Number(f[1]);
  if (!(hostPid > 0) || !(pid > 0)) return null;
  const ancestry = f[2] === '-' ? [] : f[2]!.split('.').map(Number);
  if (ancestry.some((p) => !(p > 0))) return null;
  return { hostPid, pid, ancestry, comm: Buffer.from(f[3]!, 'hex').toString('utf8'), cmdline: Buffer.from(f[4]!, 'hex').toString('utf8') };
}

export interface PumpEvents {
  /**
   * A request head (without its blank line) from a connection of sandbox `key`: answer with dial or
   * refuse. `lookup`: its process is being looked up meanwhile, and `proc` follows.
   */
  conn(id: string, key: number, lookup: boolean, head: Buffer): void;
  /** The process behind connection `id` (null: not found), after its `conn`. */
  proc(id: string, proc: FoundProcess | null): void;
  /** A CONNECT tunnel's TLS ClientHello named `sni`, not `host`: nothing went on; `cut` it once logged. */
  sni(id: string, key: number, host: string, port: number, proc: FoundProcess | null, sni: string): void;
  /** What the pump wants on the proxy's log. */
  say(message: string): void;
  /** The pump is gone (every connection and listener with it). */
  exit(why: string): void;
}

const SERVE_WAIT_MS = 5_000;

export class EgressPump {
  private child: ChildProcessWithoutNullStreams | null = null;
  private buffered = '';
  private readonly serving = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
  private readonly lookups: Array<(proc: FoundProcess | null) => void> = [];

  constructor(
    private readonly binary: string,
    private readonly on: PumpEvents,
  ) {}

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** Starts the pump; resolves once it says it is ready. */
  start(): Promise<void> {
    const child = spawn(this.binary, [], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child = child;
    return new Promise((resolve, reject) => {
      let ready = false;
      const gone = (why: string): void => {
        if (this.child !== child) return;
        this.child = null;
        for (const w of this.serving.values()) w.reject(new Error(`the egress pump exited: ${why}`));
        this.serving.clear();
        for (const l of this.lookups.splice(0)) l(null);
        if (!ready) reject(new Error(`the egress pump did not start: ${why}`));
        else this.on.exit(why);
      };
      child.on('error', (e) => gone(e.message));
      child.on('exit', (code, signal) => gone(signal ? `killed by ${signal}` : `exit code ${code}`));
      child.stdin.on('error', () => undefined);
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (d: string) => this.on.say(`egress pump: ${d.trim()}`));
      child.stdout.setEncoding('latin1');
      child.stdout.on('data', (chunk: string) => {
        this.buffered += chunk;
        for (let nl = this.buffered.indexOf('\n'); nl >= 0; nl = this.buffered.indexOf('\n')) {
          const line = this.buffered.slice(0, nl);
          this.buffered = this.buffered.slice(nl + 1);
          if (line === 'ready') {
            ready = true;
            resolve();
          } else {
            try {
              this.line(line);
            } catch (err) {
              // One line the proxy could not take must not take the proxy (and every sandbox's way out) with it.
              this.on.say(`egress pump: a line could not be handled: ${String(err)}`);
            }
          }
        }
      });
    });
  }

  private line(line: string): void {
    const f = line.split(' ');
    switch (f[0]) {
      case 'conn':
        if (f.length === 5) this.on.conn(f[1]!, Number(f[2]), f[3] === '+', Buffer.from(f[4]!, 'hex'));
        return;
      case 'proc':
        if (f.length === 3) this.on.proc(f[1]!, f[2] === '-' ? null : parseFound(f[2]!));
        return;
      case 'sni':
        if (f.length === 7)
          this.on.sni(
            f[1]!,
            Number(f[2]),
            f[3]!,
            Number(f[4]),
            f[5] === '-' ? null : parseFound(f[5]!),
            Buffer.from(f[6]!, 'hex').toString('latin1'),
          );
        return;
      case 'served':
      case 'unserved': {
        const w = this.serving.get(Number(f[1]));
        this.serving.delete(Number(f[1]));
        if (f[0] === 'served') w?.resolve();
        else w?.reject(new Error(Buffer.from(f[2] ?? '', 'hex').toString('utf8')));
        return;
      }
      case 'found':
        this.lookups.shift()?.(f[1] === '-' || !f[1] ? null : parseFound(f[1]));
        return;
      case 'say':
        this.on.say(`egress pump: ${line.slice(4)}`);
        return;
    }
  }

  /** Commands not yet written: all those one chunk of the pump's lines gave rise to go in one write (one wake-up of the pump). */
  private outgoing: string[] = [];

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

  /** Listens for sandbox `key` on its Unix sockets (replaced if stale, 0666); `relayPath` takes its docker relay's links. */
  serve(key: number, proxyPath: string, relayPath: string | null): Promise<void> {
    if (!this.child) return Promise.reject(new Error('the egress pump is not running'));
    for (const p of [proxyPath, relayPath])
      if (p !== null && (p.includes(' ') || p.includes('\n'))) return Promise.reject(new Error(`a socket path with a space: ${p}`));
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
      this.send(`serve ${key} ${proxyPath} ${relayPath ?? '-'}`);
    });
  }

  /** Stops listening for `key`: its sockets removed, its relay links closed (its address refuses: fails closed). */
  unserve(key: number): void {
    this.send(`unserve ${key}`);
  }

  /**
   * Allowed: the pump dials `addrs` in turn (at most `timeoutMs`) and, for `http`, sends `prefix` (the
   * head in origin form) then the client's bytes; for `connect` answers 200 and checks a TLS
   * ClientHello's name against `sniHost` (null: not checked). Unreachable: 502 with `display`. The
   * destination's answer reaches the client once the connection is `logged` (now, or by `logged()`).
   */
  dial(
    id: string,
    o: {
      port: number;
      timeoutMs: number;
      kind: 'http' | 'connect';
      sniHost: string | null;
      addrs: string[];
      display: string;
      prefix: Buffer | null;
      logged: boolean;
    },
  ): void {
    const sni = o.sniHost && /^[^\s,]+$/.test(o.sniHost) ? o.sniHost : '-';
    const addrs = o.addrs.filter((a) => /^[0-9a-fA-F:.]+$/.test(a)).join(',');
    const prefix = o.prefix && o.prefix.length > 0 ? o.prefix.toString('hex') : '-';
    this.send(
      `dial ${id} ${o.port} ${Math.trunc(o.timeoutMs)} ${o.kind} ${sni} ${addrs || '-'} ${Buffer.from(o.display).toString('hex')} ${prefix} ${o.logged ? 1 : 0}`,
    );
  }

  /** Connection `id` is on the log: its answer may reach the client. */
  logged(id: string): void {
    this.send(`logged ${id}`);
  }

  /** Answers the connection with `response` and closes it once the client has finished sending. */
  refuse(id: string, response: string): void {
    this.send(`refuse ${id} ${Buffer.from(response, 'utf8').toString('hex')}`);
  }

  /** Closes the connection at once (a tunnel whose ClientHello named another host, logged). */
  cut(id: string): void {
    this.send(`cut ${id}`);
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
    c?.kill('SIGKILL');
  }
}
