import { randomBytes } from 'node:crypto';
import { chmodSync, readdirSync, unlinkSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { IDisposable } from '../shared/lifecycle.js';
import { processAlive } from '../platform/process-alive.js';

/**
 * The app's end of a sandbox's inbox (SandboxEnvironment.inbox): a Unix socket in the host folder the
 * sandbox sees read-only, to which relays the app starts in the sandbox connect. A connection counts
 * only with a token the app registered just before (128 random bits, single use): unknown or reused
 * tokens, a line too long or too slow are closed. The app only accepts here; it never connects to or
 * follows a path the sandbox controls.
 *
 * One socket per process and folder (`inbox-<pid>-<random>.sock`), 0666 so the desktop's account (uid
 * 1001 in the sandbox, not ours) may connect; sockets left by dead processes are removed at listen.
 */

/** `<32 hex>\n`: the one line a relay sends before the stream's bytes. */
const TOKEN_RE = /^[0-9a-f]{32}$/;
const MAX_LINE = 64;
/** A connection must say its token within this, or it is closed (nothing waits on a silent peer). */
export const TOKEN_LINE_MS = 5000;
/** Connections still to say their token; more are closed at once (a sandbox cannot pile them up). */
const MAX_UNNAMED = 32;
const SOCKET_RE = /^inbox-(\d+)-[0-9a-f]+\.sock$/;

export interface InboxExpectation {
  /** What the relay must send (without the newline). */
  token: string;
  /** The connection that said the token; rejects after the timeout or cancel(). */
  connection: Promise<Socket>;
  cancel(reason: Error): void;
}

interface Pending {
  resolve(s: Socket): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export class InboxTimeoutError extends Error {}

export class Inbox implements IDisposable {
  private readonly pending = new Map<string, Pending>();
  private unnamed = 0;
  private disposed = false;
  /** Connections that said a registered token (tests and the benchmark read it). */
  accepted = 0;

  private constructor(
    private readonly server: Server,
    /** The socket's host path. */
    readonly path: string,
    /** Its file name: the sandbox reaches it as `<inbox.sandboxDir>/<socketName>`. */
    readonly socketName: string,
  ) {
    server.on('connection', (s) => this.onConnection(s));
  }

  /** Listens in `hostDir` (which must exist: the backend made it and bound it into the sandbox). */
  static async listen(hostDir: string): Promise<Inbox> {
    removeStaleSockets(hostDir);
    const socketName = `inbox-${process.pid}-${randomBytes(8).toString('hex')}.sock`;
    const path = join(hostDir, socketName);
    const server = createServer({ allowHalfOpen: false });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => {
        server.off('error', reject);
        resolve();
      });
    });
    // The inbox must not keep a one-shot CLI process alive; accepted streams hold it while they are open.
    server.unref();
    server.on('error', () => undefined);
    try {
      chmodSync(path, 0o666);
    } catch (err) {
      server.close();
      throw err;
    }
    return new Inbox(server, path, socketName);
  }

  /** Registers a new token; its connection is expected within `timeoutMs`. */
  expect(timeoutMs: number): InboxExpectation {
    if (this.disposed) throw new Error('the inbox is closed');
    const token = randomBytes(16).toString('hex');
    let pending!: Pending;
    const connection = new Promise<Socket>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(token);
        reject(new InboxTimeoutError(`no connection reached the inbox within ${timeoutMs} ms`));
      }, timeoutMs);
      pending = { resolve, reject, timer };
    });
    this.pending.set(token, pending);
    return {
      token,
      connection,
      cancel: (reason) => {
        if (this.pending.get(token) !== pending) return;
        this.pending.delete(token);
        clearTimeout(pending.timer);
        pending.reject(reason);
      },
    };
  }

  private onConnection(s: Socket): void {
    s.on('error', () => undefined);
    if (this.disposed || this.unnamed >= MAX_UNNAMED) return void s.destroy();
    this.unnamed++;
    let line = Buffer.alloc(0);
    let done = false;
    const finish = (): void => {
      done = true;
      this.unnamed--;
      clearTimeout(timer);
      s.off('readable', onReadable);
      s.off('close', onClose);
    };
    const refuse = (): void => {
      finish();
      s.destroy();
    };
    const timer = setTimeout(refuse, TOKEN_LINE_MS);
    timer.unref();
    const onClose = (): void => {
      if (!done) finish();
    };
    // 'readable' + read(), not 'data': once this listener is gone the socket is neither flowing nor
    // paused, so the stream's consumer switches it on with its own 'data' listener and gets the bytes
    // that came with the token first (unshifted).
    const onReadable = (): void => {
      let chunk: Buffer | null;
      while (!done && (chunk = s.read() as Buffer | null) !== null) {
        line = Buffer.concat([line, chunk]);
        const nl = line.indexOf(0x0a);
        if (nl < 0) {
          if (line.length > MAX_LINE) refuse();
          continue;
        }
        const token = line.subarray(0, nl).toString('latin1');
        const rest = line.subarray(nl + 1);
        const p = TOKEN_RE.test(token) ? this.pending.get(token) : undefined;
        if (!p) return refuse(); // unknown, or already used: single use
        this.pending.delete(token);
        clearTimeout(p.timer);
        finish();
        if (rest.length) s.unshift(rest);
        this.accepted++;
        p.resolve(s);
      }
    };
    s.on('readable', onReadable);
    s.on('close', onClose);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.server.close();
    try {
      unlinkSync(this.path);
    } catch {
      // already gone
    }
    for (const [token, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new Error('the inbox is closed'));
      this.pending.delete(token);
    }
  }
}

/** Sockets of processes that are gone (a crash leaves its socket): the folder is the app's, not the sandbox's. */
function removeStaleSockets(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return; // listen says why
  }
  for (const name of names) {
    const m = SOCKET_RE.exec(name);
    if (!m || Number(m[1]) === process.pid || processAlive(Number(m[1]))) continue;
    try {
      unlinkSync(join(dir, name));
    } catch {
      // another process removed it first
    }
  }
}
