/**
 * Runs the /proc lookups of process-of-connection.ts on a worker thread, so the egress proxy's event
 * loop — which copies every sandbox's traffic — never stops for them. The lookup is synchronous on
 * purpose (see that file: asynchronous reads took so long the client had closed its socket), and a
 * busy sandbox (a browser: dozens of processes, hundreds of fds each) makes it tens of milliseconds:
 * on the proxy's own thread that stalled every connection's bytes each time a new one opened.
 *
 * One thread, started on first use and unref'd (it never keeps the daemon alive); lookups queue on it.
 * Run from TypeScript sources under tsx (the daemon as `npm run bench` starts it) the thread runs the
 * .ts worker through the same loader (a Worker inherits the process's --import); where no loader can
 * run it (unit tests under vitest) the lookup runs inline, as before.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { ConnectionProcess } from './egress-proxy.js';
import { processOfPort, processOfSocket } from './process-of-connection.js';

/** By source port (the /proc/net/tcp walk) or, when the socket's inode is known, by inode. */
export type Ask = { id: number; initPid: number; port: number; remotePort?: number; inode?: number };
/** The built worker; from sources, the .ts one when this process runs under tsx (see the top of this file). */
function defaultScript(): string {
  const fromSource = import.meta.url.endsWith('.ts');
  const underTsx = process.execArgv.some((a) => a === 'tsx' || /[/\\]node_modules[/\\]tsx[/\\]/.test(a));
  const name = fromSource && underTsx ? './process-lookup-worker.ts' : './process-lookup-worker.js';
  return fileURLToPath(new URL(name, import.meta.url));
}

/**
 * A worker on a .ts file: a Worker does not inherit the main thread's `--import tsx` hooks (Node 20:
 * "Unknown file extension .ts"), so the thread registers tsx itself before importing the file.
 */
function tsWorker(script: string): Worker {
  const api = import.meta.resolve('tsx/esm/api');
  const file = pathToFileURL(script).href;
  return new Worker(`import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${JSON.stringify(file)}); })`, {
    eval: true,
  });
}

type Answer = { id: number; found: ConnectionProcess | null } | { ready: true };

export class ProcessLookupThread {
  private worker: Worker | null = null;
  /** The worker has loaded and said so: until then lookups run inline (a lookup queued behind the load came too late). */
  private ready = false;
  private failed = false;
  private nextId = 1;
  private readonly waiting = new Map<number, (found: ConnectionProcess | null) => void>();

  constructor(private readonly script = defaultScript()) {}

  private start(): Worker | null {
    if (this.worker || this.failed) return this.worker;
    if (!existsSync(this.script)) {
      this.failed = true;
      return null;
    }
    const w = this.script.endsWith('.ts') ? tsWorker(this.script) : new Worker(this.script);
    w.unref();
    w.on('message', (a: Answer) => {
      if ('ready' in a) {
        if (this.worker === w) this.ready = true;
        return;
      }
      this.waiting.get(a.id)?.(a.found);
      this.waiting.delete(a.id);
    });
    const down = (): void => {
      // Whatever was asked is unknown now (null); the next lookup starts a new thread — unless this one
      // never loaded: then it would not load again either, and lookups stay inline.
      for (const settle of this.waiting.values()) settle(null);
      this.waiting.clear();
      if (this.worker !== w) return;
      if (!this.ready) this.failed = true;
      this.worker = null;
      this.ready = false;
    };
    w.on('error', down);
    w.on('exit', down);
    this.worker = w;
    return w;
  }

  /** Whether lookups now run on the thread (it has loaded). */
  onThread(): boolean {
    return this.ready;
  }

  /** Starts the thread ahead of the first lookup (from sources, loading the worker takes half a second). */
  prepare(): void {
    this.start();
  }

  /** The process holding the socket with local port `port` in `initPid`'s namespaces, or null. */
  of(initPid: number, port: number, opts: { remotePort?: number } = {}): Promise<ConnectionProcess | null> {
    return this.ask({ initPid, port, remotePort: opts.remotePort });
  }

  /** The process holding the socket with inode `inode` (found by sock-diag.ts) in `initPid`'s pid namespace, or null. */
  ofSocket(initPid: number, inode: number): Promise<ConnectionProcess | null> {
    return this.ask({ initPid, port: 0, inode });
  }

  private ask(a: Omit<Ask, 'id'>): Promise<ConnectionProcess | null> {
    const w = this.start();
    if (!w || !this.ready) return lookUp(a).catch(() => null);
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      w.postMessage({ id, ...a } satisfies Ask);
    });
  }

  async dispose(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    this.ready = false;
    if (w) await w.terminate();
  }
}

/** One lookup, as the worker thread (or, without it, the caller) runs it. */
export function lookUp(a: Omit<Ask, 'id'>): Promise<ConnectionProcess | null> {
  return a.inode !== undefined ? processOfSocket(a.initPid, a.inode) : processOfPort(a.initPid, a.port, { remotePort: a.remotePort });
}
