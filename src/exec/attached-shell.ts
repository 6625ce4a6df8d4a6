import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { Emitter, type Event, type IDisposable } from '../shared/lifecycle.js';
import { ATTACH_TRIGGER, RELAY_SCRIPT } from './attach-scripts.js';
import { CommandCapture, type RawRun, type RunRequest } from './command-capture.js';
import { FrameSplitter, type Frame } from './frame-splitter.js';
import { killTree } from './kill-tree.js';
import { KILL_GRACE_MS, newNonce } from './oneshot-runner.js';
import { remoteArgv } from './remote-argv.js';
import type { LateOutput } from './session-shell.js';
import type { TerminalMark } from './terminal.js';
import { encodeField } from './wrapper-script.js';

/** What the attached shell needs of its terminal (TerminalSession has it). */
export interface AttachableTerminal {
  readonly onMark: Event<TerminalMark>;
  readonly onExit: Event<unknown>;
  readonly exited: boolean;
  readonly promptIdle: boolean;
  /** The shell's pid inside the sandbox (for interrupting a command's processes). */
  readonly pid: number | null;
  write(data: string): void;
  beginAgentRun(): void;
  showAgentOutput(chunk: Buffer): void;
  endAgentRun(): void;
}

export interface AttachedRunRequest extends RunRequest {
  /** A workdir command: the shell goes back where it was afterwards, unless the command moved. */
  workdir?: boolean;
  /** The app's own command (moving the environment in or out): not shown in the terminal. */
  quiet?: boolean;
}

export interface AttachedRun extends RawRun {
  /** How long the command waited for the person's foreground command to give the prompt back. */
  waitedMs: number;
}

/** Shows a command on one line of the person's terminal: control characters (escapes, newlines) as `?`. */
export function shownCommand(command: string): string {
  // eslint-disable-next-line no-control-regex
  const flat = command.replace(/[\x00-\x1f\x7f-\x9f]/g, '?');
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat;
}

/**
 * At most this much of one command's output (or of the output between two commands) is shown in the
 * terminal: the relay is not paced by the viewers as the PTY is, and the result keeps its own bounded copy.
 */
export const DISPLAY_LIMIT_BYTES = 1024 * 1024;

/** Newlines as the terminal needs them (the command's output does not pass through the PTY). */
function forDisplay(chunk: Buffer): Buffer {
  return Buffer.from(chunk.toString('utf8').replace(/\r?\n/g, '\r\n'), 'utf8');
}

/**
 * A terminal's shell serving as its session's shell (attach-scripts.ts has the protocol). Commands run
 * one at a time; each waits until the person's prompt is up (a foreground command of the person runs
 * first, and the wait is reported); time waiting counts against its timeout. Frames travel over a
 * relay stream beside the PTY and are read exactly as the session shell's are.
 */
export class AttachedShell {
  private queue: Promise<unknown> = Promise.resolve();
  private capture: CommandCapture | null = null;
  /** The request in the shell's queue whose `R` has not come yet, and what to answer. */
  private offered: { nonce: string; answer: () => string } | null = null;
  private onChange: (() => void) | null = null;
  private closed = false;
  lastUsedAt = Date.now();
  /** The last cwd a command of this shell reported. */
  lastCwd: string | null = null;
  private readonly subscriptions: IDisposable[] = [];
  /** Late output's listeners; one that throws is ignored: it must not take the data handler (and the app) down. */
  private readonly lateOutput = new Emitter<LateOutput>(() => undefined);
  /** This stretch between commands already showed the late-output marker in the terminal. */
  private lateMarked = false;

  private constructor(
    private readonly env: SandboxEnvironment,
    private readonly user: string | undefined,
    private readonly terminal: AttachableTerminal,
    private readonly relay: ChildProcessWithoutNullStreams,
    private readonly out: FrameSplitter,
    private readonly err: FrameSplitter,
    readonly incarnation: string,
  ) {
    this.subscriptions.push(
      terminal.onMark((m) => {
        if (m.kind === 'idle') this.poke();
      }),
      terminal.onExit(() => this.poke()),
    );
    relay.on('close', () => {
      this.closed = true;
      this.poke();
    });
  }

  /**
   * Joins a terminal whose shell reported its channel directory. Throws when the relay cannot be
   * started (the terminal then stays a plain terminal and the session keeps its own shell).
   */
  static open(
    env: SandboxEnvironment,
    user: string | undefined,
    terminal: AttachableTerminal,
    dir: string,
    opts: { startTimeoutMs?: number } = {},
  ): Promise<AttachedShell> {
    const boot = newNonce();
    const argv = remoteArgv(env, { user, interactive: false }, ['bash', '-c', RELAY_SCRIPT, 'sandbox-desk', boot, dir]);
    return new Promise<AttachedShell>((resolve, reject) => {
      const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
      child.stdin.on('error', () => undefined);
      let shell: AttachedShell | null = null;
      const early: Buffer[] = [];
      const out = new FrameSplitter(
        (c) => shell?.payload('out', c),
        (f) => (shell ? shell.frame(f) : hello(f)),
        (why) => shell?.capture?.broken(why),
      );
      const err = new FrameSplitter(
        (c) => (shell ? shell.payload('err', c) : early.push(c)),
        (f) => shell?.frame(f),
        (why) => shell?.capture?.broken(why),
        { S: 3, E: 3, X: 0, H: 1, R: 0 },
      );
      out.expect(boot);
      const timeoutMs = opts.startTimeoutMs ?? 15_000;
      const timer = setTimeout(() => fail(`the attach relay did not start within ${timeoutMs} ms`), timeoutMs);
      const fail = (why: string): void => {
        clearTimeout(timer);
        child.kill('SIGKILL');
        reject(new Error(why));
      };
      const hello = (f: Frame): void => {
        if (f.fields[0] !== 'H') return;
        clearTimeout(timer);
        child.removeListener('close', onEarlyClose);
        shell = new AttachedShell(env, user, terminal, child, out, err, env.incarnation);
        resolve(shell);
      };
      const onEarlyClose = (code: number | null): void =>
        fail(
          `the attach relay exited before it started (exit ${code})${early.length ? `: ${Buffer.concat(early).toString('utf8').trim()}` : ''}`,
        );
      child.stdout.on('data', (c: Buffer) => out.push(c));
      child.stderr.on('data', (c: Buffer) => err.push(c));
      child.on('close', onEarlyClose);
      child.on('close', () => {
        out.end();
        err.end();
      });
      child.on('error', (e) => fail(`could not start ${argv[0]}: ${e.message}`));
    });
  }

  /** The terminal and its channel are up: commands can be delivered. */
  get alive(): boolean {
    return !this.closed && !this.terminal.exited;
  }

  get busy(): boolean {
    return this.capture !== null || this.offered !== null;
  }

  /** Runs one command in the terminal's shell; commands run one after another. */
  run(req: AttachedRunRequest): Promise<AttachedRun> {
    const next = this.queue.then(() => this.runNow(req));
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Something changed (the prompt came back, a frame arrived, the terminal ended): the running step looks again. */
  private poke(): void {
    this.onChange?.();
  }

  private payload(stream: 'out' | 'err', chunk: Buffer): void {
    const cap = this.capture;
    // Taken once the shell was told to run it: its stdout may come before the start frame (another stream).
    if (cap && this.taken) {
      // Before the command's begin frames the capture hands the bytes to late(), which shows them marked.
      const early = stream === 'out' ? !cap.begun : !cap.start;
      if (stream === 'out') cap.stdoutPayload(chunk);
      else cap.stderrPayload(chunk);
      if (!this.quietRun && !early) this.show(chunk);
    } else {
      // Between commands: late output of an earlier command's background job. It belongs to no command
      // (never to the next one); the person sees it.
      this.late(stream === 'out' ? 'stdout' : 'stderr', chunk);
    }
  }

  /**
   * Output of an earlier command's background job (between commands, or before the next one's begin
   * frames): shown in the terminal under a marker saying so, and given to the late-output listeners
   * (the core logs it), as a session shell's is. Returns the unsubscribe.
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
    if (!this.lateMarked) {
      this.lateMarked = true;
      this.terminal.showAgentOutput(Buffer.from(`\r\n\x1b[2m[late output of an earlier agent command's background job]\x1b[0m\r\n`));
    }
    this.show(chunk);
    this.lateOutput.fire({ stream, bytes: Buffer.from(chunk) });
  }

  private show(chunk: Buffer): void {
    const room = DISPLAY_LIMIT_BYTES - this.shownBytes;
    this.shownBytes += chunk.length;
    if (room > 0) this.terminal.showAgentOutput(forDisplay(chunk.subarray(0, room)));
    if (chunk.length > room && !this.cutShown) {
      this.cutShown = true;
      this.terminal.showAgentOutput(
        Buffer.from(`\r\n\x1b[2m[more output than the terminal shows (${DISPLAY_LIMIT_BYTES} bytes); the result has it]\x1b[0m\r\n`),
      );
    }
  }

  private quietRun = false;
  /** Bytes shown in the terminal since the last command started (DISPLAY_LIMIT_BYTES). */
  private shownBytes = 0;
  private cutShown = false;
  /** The current capture's command was accepted by the shell (answered `1`/`w`). */
  private taken = false;

  private frame(f: Frame): void {
    if (f.fields[0] === 'R' && f.fields.length === 1 && this.offered?.nonce === f.nonce) {
      const { answer } = this.offered;
      this.offered = null;
      this.relay.stdin.write(answer());
      this.poke();
      return;
    }
    const cap = this.capture;
    if (!cap) return;
    cap.frame(f);
    this.poke();
  }

  private async runNow(req: AttachedRunRequest): Promise<AttachedRun> {
    const t0 = Date.now();
    const nonce = newNonce();
    // Bytes before this command's begin frames are an earlier one's background job's: never this command's.
    const cap = new CommandCapture(nonce, req.maxOutputBytes, (stream, chunk) => this.late(stream, chunk));
    this.lastUsedAt = Date.now();
    let killed: RawRun['killed'] = null;
    let waitedMs = 0;
    const done = (exit: number | null): AttachedRun => ({ ...cap.result(exit, killed), waitedMs });
    if (!this.alive) return { ...done(null), transportError: 'the terminal attached to this session has closed' };

    return new Promise<AttachedRun>((resolve) => {
      let phase: 'waiting' | 'offered' | 'running' = 'waiting';
      let settled = false;
      let graceTimer: NodeJS.Timeout | undefined;
      const settle = (): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        clearTimeout(graceTimer);
        req.signal?.removeEventListener('abort', onAbort);
        this.onChange = null;
        if (this.capture === cap) {
          this.capture = null;
          this.taken = false;
          // Its frames all came: the splitters stop holding back bytes that might begin its nonce, so a
          // background job's short late line reaches the terminal now, not with the next command.
          if (cap.complete) this.releaseHeldBytes();
        }
        if (phase === 'running' && !this.quietRun) this.terminal.endAgentRun();
        this.quietRun = false;
        this.lastUsedAt = Date.now();
        const raw = done(null);
        if (raw.end && !killed && raw.end.state === 'ok') this.lastCwd = raw.end.cwd;
        resolve(raw);
      };
      const deliver = (): void => {
        this.out.expect(nonce);
        this.err.expect(nonce);
        this.capture = cap;
        this.quietRun = req.quiet === true;
        phase = 'offered';
        this.offered = {
          nonce,
          answer: () => {
            if (killed) return '0\n';
            // Until the shell took it: a trigger that reached the person's program just as it started waits there too.
            waitedMs = Date.now() - t0;
            phase = 'running';
            this.taken = true;
            this.shownBytes = 0;
            this.cutShown = false;
            this.lateMarked = false;
            if (!req.quiet) {
              this.terminal.beginAgentRun();
              this.terminal.showAgentOutput(Buffer.from(`\r\n\x1b[2m[agent]\x1b[0m $ ${shownCommand(req.command)}\r\n`, 'utf8'));
            }
            return `${req.workdir ? 'w' : '1'}\n${nonce}\n`;
          },
        };
        this.relay.stdin.write([nonce, req.target, req.tmpDir, req.command].map(encodeField).join('\n') + '\n');
        this.terminal.write(ATTACH_TRIGGER);
      };
      const step = (): void => {
        if (settled) return;
        if (!this.alive) {
          if (this.capture === cap) cap.transportNote = 'the terminal attached to this session closed while the command ran';
          return settle();
        }
        if (phase === 'waiting') {
          if (killed) return settle();
          if (!this.terminal.promptIdle) return;
          if (!this.offered) deliver();
          // An earlier call's request that ended before the shell took it: it must be answered first.
          else this.retrigger();
        } else if (phase === 'offered') {
          if (killed) {
            // Still queued in the shell: answered `0` when its R comes (the next command waits for that); this call ends now.
            this.capture = null;
            return settle();
          }
          // Not taken yet: the trigger came before the request reached the shell, or went to a program the
          // person started just then. The prompt is back: offer again (a trigger with nothing queued does nothing).
          if (this.terminal.promptIdle) this.retrigger();
        } else if (cap.complete) settle();
      };
      const kill = (why: 'timeout' | 'interrupt'): void => {
        if (killed || settled) return;
        killed = why;
        if (phase !== 'running') return step();
        const pid = this.terminal.pid;
        if (pid === null) return;
        // Interrupt the command's processes but keep the person's shell; a command that is the shell
        // itself busy (a builtin loop) cannot be cut without ending the terminal: the call ends, the
        // result says its cwd was not observed.
        void killTree(this.env, this.user, pid, { includeRoot: false }).then(() => {
          graceTimer = setTimeout(settle, KILL_GRACE_MS);
        });
      };
      const onAbort = (): void => kill('interrupt');
      const timer = setTimeout(() => kill('timeout'), req.timeoutMs);
      if (req.signal?.aborted) queueMicrotask(onAbort);
      else req.signal?.addEventListener('abort', onAbort, { once: true });
      this.onChange = step;
      step();
    });
  }

  private retriggerTimer: NodeJS.Timeout | null = null;

  /** At most one trigger per 20 ms: a shell that redraws its prompt at once is not driven in a tight loop. */
  private retrigger(): void {
    if (this.retriggerTimer) return;
    this.retriggerTimer = setTimeout(() => {
      this.retriggerTimer = null;
      if (this.offered && this.alive && this.terminal.promptIdle) this.terminal.write(ATTACH_TRIGGER);
    }, 20);
  }

  /** Ends the channel (the terminal closed or detached). */
  close(): void {
    for (const s of this.subscriptions) s.dispose();
    this.closed = true;
    this.relay.stdin.end();
    setTimeout(() => {
      if (this.relay.exitCode === null) this.relay.kill('SIGKILL');
    }, 2000).unref();
    this.poke();
  }
}
