import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { Emitter } from '../shared/lifecycle.js';
import { CommandCapture, type RawRun, type RunRequest } from './command-capture.js';
import { FrameSplitter, type Frame } from './frame-splitter.js';
import { killTree } from './kill-tree.js';
import { exitStatusOf, KILL_GRACE_MS, newNonce } from './oneshot-runner.js';
import { remoteArgv } from './remote-argv.js';
import { encodeRequest, SHELL_SCRIPT } from './wrapper-script.js';

/** Bytes an earlier command's background job printed after that command ended. */
export interface LateOutput {
  stream: 'stdout' | 'stderr';
  bytes: Buffer;
}

/**
 * One long-lived `bash` inside the sandbox for one session, over an `execPrefix({interactive:false})`
 * stream. Commands are framed with per-command nonces exactly as in one-shot mode, so both modes give
 * the same results; this one just skips the ~100 ms of starting a new exec per command.
 */
export class SessionShell {
  private capture: CommandCapture | null = null;
  private onSettled: ((exit: number | null) => void) | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private exited = false;
  private exitStatus: number | null = null;
  /** Late output's listeners; one that throws is ignored: it must not take the data handler (and the app) down. */
  private readonly lateOutput = new Emitter<LateOutput>(() => undefined);
  /** The last cwd this shell reported for a finished command: the snapshot a rescue may use. */
  lastCwd: string | null = null;
  lastUsedAt = Date.now();

  private constructor(
    private readonly env: SandboxEnvironment,
    private readonly user: string | undefined,
    private readonly child: ChildProcessWithoutNullStreams,
    private readonly out: FrameSplitter,
    private readonly err: FrameSplitter,
    /** The driver's pid inside the sandbox. */
    readonly pid: number,
    readonly incarnation: string,
  ) {
    child.stdout.on('data', (c: Buffer) => this.out.push(c));
    child.stderr.on('data', (c: Buffer) => this.err.push(c));
    // Writing to a shell that just died fails with EPIPE; the 'close' below settles the command.
    child.stdin.on('error', () => undefined);
    child.on('close', (code, signal) => {
      this.exited = true;
      this.exitStatus = exitStatusOf(code, signal);
      this.out.end();
      this.err.end();
      this.onSettled?.(this.exitStatus);
    });
  }

  /** Starts the shell and waits for its hello. Throws when no stream can be opened. */
  static open(env: SandboxEnvironment, user: string | undefined, opts: { startTimeoutMs?: number } = {}): Promise<SessionShell> {
    const boot = newNonce();
    const argv = remoteArgv(env, { user, interactive: false }, ['bash', '-c', SHELL_SCRIPT, 'sandbox-desk', boot]);
    return new Promise<SessionShell>((resolve, reject) => {
      const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
      let shell: SessionShell | null = null;
      const early: Buffer[] = [];
      const route = (stream: 'out' | 'err') => (c: Buffer) => shell?.routePayload(stream, c);
      const broken = (why: string): void => shell?.routeBroken(why);
      const out = new FrameSplitter(route('out'), (f) => (shell ? shell.routeFrame(f) : hello(f)), broken);
      const err = new FrameSplitter(
        (c) => (shell ? shell.routePayload('err', c) : early.push(c)),
        (f) => shell?.routeFrame(f),
        broken,
      );
      out.expect(boot);
      const fail = (why: string): void => {
        clearTimeout(timer);
        child.kill('SIGKILL');
        reject(new Error(why));
      };
      const hello = (f: Frame): void => {
        if (f.fields[0] !== 'H') return;
        clearTimeout(timer);
        child.removeListener('close', onEarlyClose);
        child.stdout.removeListener('data', earlyOut);
        child.stderr.removeListener('data', earlyErr);
        shell = new SessionShell(env, user, child, out, err, Number(f.fields[1]), env.incarnation);
        resolve(shell);
      };
      const earlyOut = (c: Buffer): void => out.push(c);
      const earlyErr = (c: Buffer): void => err.push(c);
      const onEarlyClose = (code: number | null): void =>
        fail(
          `session shell exited before it started (exit ${code})${early.length ? `: ${Buffer.concat(early).toString('utf8').trim()}` : ''}`,
        );
      const timer = setTimeout(
        () => fail(`session shell did not start within ${opts.startTimeoutMs ?? 15000} ms`),
        opts.startTimeoutMs ?? 15000,
      );
      child.stdout.on('data', earlyOut);
      child.stderr.on('data', earlyErr);
      child.on('close', onEarlyClose);
      child.on('error', (e) => fail(`could not start ${argv[0]}: ${e.message}`));
    });
  }

  get alive(): boolean {
    return !this.exited;
  }

  /** A command is running in it right now. */
  get busy(): boolean {
    return this.capture !== null;
  }

  /** Runs one command; commands of one session run one after another. */
  run(req: RunRequest): Promise<RawRun> {
    const next = this.queue.then(() => this.runNow(req));
    this.queue = next.catch(() => undefined);
    return next;
  }

  private runNow(req: RunRequest): Promise<RawRun> {
    const nonce = newNonce();
    const cap = new CommandCapture(nonce, req.maxOutputBytes, (stream, chunk) => this.late(stream, chunk));
    this.out.expect(nonce);
    this.err.expect(nonce);
    this.lastUsedAt = Date.now();
    if (this.exited) return Promise.resolve({ ...cap.result(this.exitStatus, null), transportError: 'session shell has exited' });

    return new Promise<RawRun>((resolve) => {
      let killed: RawRun['killed'] = null;
      let settled = false;
      let graceTimer: NodeJS.Timeout | undefined;
      const settle = (exit: number | null): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        clearTimeout(graceTimer);
        req.signal?.removeEventListener('abort', onAbort);
        this.capture = null;
        this.onSettled = null;
        this.lastUsedAt = Date.now();
        // Its frames all came: the splitters stop holding back bytes that might begin its nonce, so a
        // background job's short late line is reported now, not when the next command's output comes.
        if (cap.complete) this.releaseHeldBytes();
        const raw = cap.result(exit, killed);
        if (raw.end && !killed && raw.end.state === 'ok' && !raw.end.notUtf8) this.lastCwd = raw.end.cwd;
        resolve(raw);
      };
      this.capture = cap;
      this.onSettled = (exit) => settle(exit);
      const checkComplete = (): void => {
        if (cap.complete) settle(null);
      };
      this.completionCheck = checkComplete;

      const kill = (why: 'timeout' | 'interrupt'): void => {
        if (killed || settled) return;
        killed = why;
        // Interrupt the command's processes but keep the shell; if it does not come back, replace it.
        void killTree(this.env, this.user, this.pid, { includeRoot: false }).then(() => {
          graceTimer = setTimeout(() => {
            if (settled) return;
            void killTree(this.env, this.user, this.pid, { includeRoot: true }).finally(() => {
              this.child.kill('SIGKILL');
              settle(null);
            });
          }, KILL_GRACE_MS);
        });
      };
      const onAbort = (): void => kill('interrupt');
      const timer = setTimeout(() => kill('timeout'), req.timeoutMs);
      if (req.signal?.aborted) queueMicrotask(onAbort);
      else req.signal?.addEventListener('abort', onAbort, { once: true });

      this.child.stdin.write(encodeRequest(nonce, req.target, req.tmpDir, req.command));
    });
  }

  private completionCheck: (() => void) | null = null;

  /**
   * Output that a command's background jobs printed after it ended — between commands, or before the
   * next command's begin frames — marked as such: it is never given to another command's result.
   * (A terminal attached to the session may show it; the core logs it.) Returns the unsubscribe.
   */
  onLateOutput(listener: (late: LateOutput) => void): () => void {
    const subscription = this.lateOutput.event(listener);
    return () => subscription.dispose();
  }

  private releaseHeldBytes(): void {
    for (const splitter of [this.out, this.err]) {
      splitter.expect();
      splitter.push(Buffer.alloc(0));
    }
  }

  private late(stream: 'stdout' | 'stderr', chunk: Buffer): void {
    this.lateOutput.fire({ stream, bytes: Buffer.from(chunk) });
  }

  private routePayload(stream: 'out' | 'err', chunk: Buffer): void {
    // Output between commands (a background job of an earlier one) belongs to no command.
    if (!this.capture) return this.late(stream === 'out' ? 'stdout' : 'stderr', chunk);
    if (stream === 'out') this.capture.stdoutPayload(chunk);
    else this.capture.stderrPayload(chunk);
  }

  private routeBroken(why: string): void {
    this.capture?.broken(why);
  }

  private routeFrame(f: Frame): void {
    if (!this.capture) return;
    this.capture.frame(f);
    if (this.capture.complete) this.completionCheck?.();
  }

  /** Ends the shell: EOF on its stdin ends the driver loop; a stubborn one is killed. */
  close(): void {
    if (this.exited) return;
    this.child.stdin.end();
    setTimeout(() => {
      if (!this.exited) this.child.kill('SIGKILL');
    }, 2000).unref();
  }
}
