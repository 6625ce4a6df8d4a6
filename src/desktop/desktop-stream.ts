import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { remoteArgv } from '../exec/remote-argv.js';
import { SandboxDeskError } from '../shared/errors.js';
import { Emitter, type Event, type IDisposable } from '../shared/lifecycle.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { Inbox, InboxTimeoutError } from './inbox.js';
import { INBOX_RELAY } from './inbox-relay-script.js';
import { openRelay } from './relay.js';

/**
 * A raw byte stream to the desktop's Xvnc, as its callers use it (the live screen, viewers' WebSockets,
 * the watch, one-off RFB work): stdout the server's bytes, stdin ours, kill() ends it, 'close' once it
 * ended. The stdio relay's ChildProcess is one as it is; the inbox stream is the other.
 */
export interface DesktopStream {
  readonly stdout: Readable;
  readonly stdin: Writable;
  kill(): boolean;
  on(event: 'close', listener: () => void): this;
  once(event: 'close', listener: () => void): this;
}

/** How one stream was opened, and why not through the inbox when it was not. */
export interface StreamOpened {
  via: 'inbox' | 'stdio';
  reason?: string;
}

/**
 * How long the relay has to reach the inbox after its exec is spawned: a `docker exec` takes 0.1–0.4 s,
 * seconds on a loaded machine. Past it the stream falls back to the stdio relay (and the inbox is not
 * tried again in that environment: a mount that no longer shows the app's socket stays so).
 */
export const INBOX_CONNECT_MS = 15_000;
const STDERR_KEPT = 2048;

/** The inbox stream: the relay's socket both ways; the exec that started the relay lives as long. */
class InboxStream extends EventEmitter implements DesktopStream {
  readonly stdout: Socket;
  readonly stdin: Socket;
  private closed = false;

  constructor(
    private readonly socket: Socket,
    private readonly child: ChildProcess,
  ) {
    super();
    this.stdout = socket;
    this.stdin = socket;
    socket.once('close', () => this.end());
    // The exec gone (killed, the sandbox stopped): the relay in the sandbox sees its stdin end and exits too.
    child.once('exit', () => socket.destroy());
  }

  private end(): void {
    if (this.closed) return;
    this.closed = true;
    this.child.kill();
    this.emit('close');
  }

  kill(): boolean {
    this.socket.destroy();
    this.child.kill();
    return true;
  }
}

/**
 * Opens the desktop's streams. The one place that decides between the two paths:
 *
 * - through the inbox where the environment has one (Docker sandboxes made since inboxes exist): the
 *   relay still starts through execPrefix, as the desktop's account, but its bytes go socket to socket
 *   (sandbox → the app's Unix socket), skipping the exec's stdio — the docker CLI, dockerd and the
 *   shim, three user-space hops that on a loaded 2-core machine cost the stream 3–18 % of direct TCP's fps;
 * - else through the exec's stdio (relay.ts): QEMU and plugin backends (no inbox), Docker sandboxes made
 *   before inboxes (no mount), an inbox that cannot be listened on or reached, python3 missing. The
 *   reason is remembered per environment (one failed exec, not one per stream) and told in onOpened.
 */
export class DesktopStreams implements IDisposable {
  private readonly inboxes = new Map<string, Promise<Inbox>>();
  private readonly noInbox = new WeakMap<SandboxEnvironment, string>();
  private readonly opened = new Emitter<StreamOpened>();
  readonly onOpened: Event<StreamOpened> = this.opened.event;
  private disposed = false;

  constructor(private readonly connectMs = INBOX_CONNECT_MS) {}

  async open(env: SandboxEnvironment, socket: string, user: string | undefined): Promise<DesktopStream> {
    return (await this.openSaying(env, socket, user)).stream;
  }

  /**
   * open(), and which path the stream took. Through the inbox the relay has connected to the desktop's
   * socket before it is returned (a socket that is not there throws desktop_not_running); the stdio relay
   * is returned as soon as it is spawned, whether or not the socket is there.
   */
  async openSaying(
    env: SandboxEnvironment,
    socket: string,
    user: string | undefined,
  ): Promise<{ stream: DesktopStream; via: StreamOpened['via'] }> {
    const why = this.whyNotInbox(env);
    if (why) return { stream: this.stdio(env, socket, user, why), via: 'stdio' };
    const inbox = env.inbox!;
    let listening: Inbox;
    try {
      listening = await this.inboxIn(inbox.hostDir);
    } catch (err) {
      const reason = this.remember(env, `cannot listen in ${inbox.hostDir}: ${(err as Error).message}`);
      return { stream: this.stdio(env, socket, user, reason), via: 'stdio' };
    }
    const r = await this.throughInbox(env, listening, `${inbox.sandboxDir}/${listening.socketName}`, socket, user);
    if ('stream' in r) {
      this.opened.fire({ via: 'inbox' });
      return { stream: r.stream, via: 'inbox' };
    }
    return { stream: this.stdio(env, socket, user, this.remember(env, r.fallback)), via: 'stdio' };
  }

  private whyNotInbox(env: SandboxEnvironment): string | null {
    if (this.disposed) return 'the desktop service is closing';
    if (!env.inbox) return 'the environment has no inbox (not a Docker sandbox made with one)';
    return this.noInbox.get(env) ?? null;
  }

  private remember(env: SandboxEnvironment, reason: string): string {
    this.noInbox.set(env, reason);
    return reason;
  }

  private stdio(env: SandboxEnvironment, socket: string, user: string | undefined, reason: string): DesktopStream {
    this.opened.fire({ via: 'stdio', reason });
    return openRelay(env, { unix: socket }, user);
  }

  private inboxIn(hostDir: string): Promise<Inbox> {
    let p = this.inboxes.get(hostDir);
    if (!p) {
      p = Inbox.listen(hostDir);
      this.inboxes.set(hostDir, p);
      p.catch(() => this.inboxes.delete(hostDir));
    }
    return p;
  }

  /** The relay through execPrefix; its connection, or why to fall back. A desktop socket that is gone throws. */
  private async throughInbox(
    env: SandboxEnvironment,
    inbox: Inbox,
    inboxPath: string,
    target: string,
    user: string | undefined,
  ): Promise<{ stream: DesktopStream } | { fallback: string }> {
    const argv = remoteArgv(env, { user, interactive: false }, ['python3', '-c', INBOX_RELAY, inboxPath, target]);
    const expected = inbox.expect(this.connectMs);
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < STDERR_KEPT) stderr += d.toString('utf8');
    });
    child.stdin.on('error', () => undefined);
    // The token on stdin (never argv: every account in the sandbox may read a process's argv).
    child.stdin.write(`${expected.token}\n`);
    const exited = new Promise<{ code: number | null; err?: Error }>((resolve) => {
      child.once('error', (err) => resolve({ code: null, err }));
      // 'close', not 'exit': by then stderr is all in, for the reason below.
      child.once('close', (code) => resolve({ code }));
    });
    const first = await Promise.race([
      expected.connection.then(
        (s) => ({ socket: s }),
        (err: Error) => ({ err }),
      ),
      exited.then((e) => ({ exit: e })),
    ]);
    if ('socket' in first) return { stream: new InboxStream(first.socket, child) };
    expected.cancel(new Error('the relay ended'));
    child.kill();
    if ('err' in first) {
      return {
        fallback: first.err instanceof InboxTimeoutError ? `the relay did not reach the inbox (${first.err.message})` : first.err.message,
      };
    }
    const said = stderr.trim().split('\n').pop() ?? '';
    const { code, err } = first.exit;
    if (code === 3) {
      throw new SandboxDeskError('desktop_not_running', `the desktop's screen socket could not be reached${said ? `: ${said}` : ''}`);
    }
    if (err) return { fallback: `the relay could not start: ${err.message}` };
    if (code === 126 || code === 127) return { fallback: `python3 could not run in the sandbox (exit ${code}${said ? `: ${said}` : ''})` };
    return { fallback: `the inbox relay exited with ${code}${said ? `: ${said}` : ''}` };
  }

  dispose(): void {
    this.disposed = true;
    this.opened.dispose();
    for (const p of this.inboxes.values())
      void p.then(
        (i) => i.dispose(),
        () => undefined,
      );
    this.inboxes.clear();
  }
}
