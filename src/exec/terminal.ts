import { randomBytes } from 'node:crypto';
import { spawn as spawnPty, type IPty } from 'node-pty';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { Emitter, type Event, type IDisposable } from '../shared/lifecycle.js';
import { killTree } from './kill-tree.js';
import { remoteArgv } from './remote-argv.js';
import { ScrollbackBuffer } from './scrollback-buffer.js';
import { ENTER_FUNCTION } from './wrapper-script.js';
import { ATTACH_PRELUDE, ATTACH_RC, PROMPT_HOOK } from './attach-scripts.js';

/**
 * Starts an interactive login shell in the session's cwd (entered as the sandbox user, walking up
 * like every command does), and makes every prompt report the shell's physical cwd as an OSC 7
 * sequence tagged with a per-terminal nonce — the shell measuring itself, so the session's record
 * follows the human's `cd`s. Before the login shell starts it reports its PID the same way (`pid:N`;
 * `exec` keeps the PID): killing the local exec client alone would leave the shell running in a
 * container, so `dispose` ends the shell's tree inside the sandbox by that PID.
 *   bash -c TERMINAL_SCRIPT sandbox-desk <target> <tmpdir> <nonce> <attach rc>
 * It also prepares the shell to be its session's shell (attach-scripts.ts: `dir:`, `idle:`, `busy:` and
 * `run:` reports with the same tag).
 */
const TERMINAL_SCRIPT = `${ENTER_FUNCTION}
__sd_enter "$1" "$2"
[ "$__sd_why" = ok ] || printf 'sandbox-desk: %s is %s; starting in %s\\r\\n' "$1" "$__sd_why" "$__sd_used" >&2
export SDESK_OSC7_TAG="sdesk-$3"
${PROMPT_HOOK}
export -f __sdesk_osc7
export PROMPT_COMMAND=__sdesk_osc7 TERM=xterm-256color
unset -f __sd_enter __sd_cd
builtin printf '\\033]7;file://%spid:%s\\007' "$SDESK_OSC7_TAG" "$$"
${ATTACH_PRELUDE}
exec bash -l
`;

/** Above this many bytes waiting for the viewer, the PTY is paused (flow control). */
const HIGH_WATER = 1024 * 1024;
/** Output kept for a viewer that (re)attaches, when the caller does not say (config `terminal.scrollbackBytes`). */
export const DEFAULT_SCROLLBACK_BYTES = 1024 * 1024;

/** A report of the attach side of the shell (attach-scripts.ts). */
export type TerminalMark = { kind: 'dir'; dir: string } | { kind: 'idle' } | { kind: 'busy' } | { kind: 'run' };

export interface TerminalSink {
  send(data: Buffer, done: () => void): void;
  /** Bytes queued towards the viewer. */
  readonly bufferedAmount: number;
}

/**
 * One terminal: a local PTY running `execPrefix({interactive:true})` + a login shell in the sandbox.
 * Its shell's cwd reports and its end are events (`onCwd`, `onExit`); `dispose` ends it — nothing
 * else does: viewers come and go (`attach` returns the detach), each new one gets the scrollback
 * first. Several viewers at once all see the output and may all type (input is interleaved as it
 * arrives); the last resize wins. A viewer that falls behind pauses the shell for all of them.
 */
export class TerminalSession implements IDisposable {
  readonly id: string;
  private readonly cwdEmitter = new Emitter<string>();
  private readonly exitEmitter = new Emitter<{ exitCode: number; signal?: number | undefined }>();
  /** Each prompt's measured cwd (`pwd -P`), as the shell reported it. */
  readonly onCwd: Event<string> = this.cwdEmitter.event;
  /** The shell ended (it exited, or the terminal was disposed); fires once. Late subscribers: see `exited`. */
  readonly onExit: Event<{ exitCode: number; signal?: number | undefined }> = this.exitEmitter.event;
  private readonly outputEmitter = new Emitter<string>();
  private readonly resizeEmitter = new Emitter<{ cols: number; rows: number }>();
  /** Every chunk the shell wrote, as it arrived (the replay recorder writes it to an asciicast file). */
  readonly onOutput: Event<string> = this.outputEmitter.event;
  /** The PTY was resized (a viewer's resize). */
  readonly onResize: Event<{ cols: number; rows: number }> = this.resizeEmitter.event;
  private readonly pty: IPty;
  private readonly tag: string;
  private readonly user: string | undefined;
  /** The shell's PID inside the sandbox, once it reported it. */
  private remotePid: number | null = null;
  private disposing = false;
  private readonly sinks = new Set<TerminalSink>();
  private readonly scrollback: ScrollbackBuffer;
  readonly createdAt = new Date().toISOString();
  private size: { cols: number; rows: number };
  private oscTail = '';
  private paused = false;
  private readonly markEmitter = new Emitter<TerminalMark>();
  /** The attach reports of the shell (attach-scripts.ts): its channel directory, its prompt's state, a delivered command. */
  readonly onMark: Event<TerminalMark> = this.markEmitter.event;
  /** The prompt is up and readline reads the keyboard: a delivered command's trigger is read by it. */
  promptIdle = false;
  /**
   * While an agent's command runs in the shell: the command's output (which comes over the attach
   * channel, not the PTY) is shown after the shell's `run:` mark, and what the PTY prints after that
   * mark (readline redrawing the prompt) is held until the command's output is all shown.
   */
  private agentRun: { marked: boolean; pending: Buffer[]; held: Buffer[] } | null = null;
  exited = false;
  /** A viewer attached at least once (a terminal nobody ever attaches to is ended by the server). */
  everAttached = false;

  constructor(
    private readonly env: SandboxEnvironment,
    opts: {
      user?: string | undefined;
      target: string;
      cols: number;
      rows: number;
      scrollbackBytes?: number | undefined;
      /**
       * A terminal reopened in place (a restore replaced its sandbox): the id its viewers know, and the
       * output they had seen, so a viewer that reattaches finds its history above the new prompt.
       */
      reopen?: { id: string; scrollback: Buffer } | undefined;
    },
  ) {
    this.id = opts.reopen?.id ?? randomBytes(12).toString('hex');
    this.scrollback = new ScrollbackBuffer(opts.scrollbackBytes ?? DEFAULT_SCROLLBACK_BYTES);
    if (opts.reopen) this.scrollback.push(opts.reopen.scrollback);
    this.size = { cols: opts.cols, rows: opts.rows };
    this.user = opts.user;
    const nonce = randomBytes(8).toString('hex');
    this.tag = `\x1b]7;file://sdesk-${nonce}`;
    const argv = remoteArgv(env, { user: opts.user, interactive: true }, [
      'bash',
      '-c',
      TERMINAL_SCRIPT,
      'sandbox-desk',
      opts.target,
      env.getTempDir(),
      nonce,
      ATTACH_RC,
    ]);
    this.pty = spawnPty(argv[0]!, argv.slice(1), { name: 'xterm-256color', cols: opts.cols, rows: opts.rows, env: process.env });
    this.pty.onData((data) => {
      let marked = false;
      this.scanCwd(
        data,
        // A terminal being disposed reports nothing more: its owner may be closing the store the record goes to.
        (cwd) => {
          if (!this.disposing) this.cwdEmitter.fire(cwd);
        },
        (mark) => {
          if (mark.kind === 'run') marked = true;
          else if (mark.kind === 'idle') this.promptIdle = true;
          else if (mark.kind === 'busy') this.promptIdle = false;
          this.markEmitter.fire(mark);
        },
      );
      const run = this.agentRun;
      if (run?.marked) {
        run.held.push(Buffer.from(data, 'utf8'));
        return;
      }
      this.show(data);
      if (run && marked) {
        run.marked = true;
        for (const chunk of run.pending.splice(0)) this.show(chunk);
      }
    });
    this.pty.onExit((e) => {
      this.exited = true;
      this.exitEmitter.fire({ exitCode: e.exitCode, signal: e.signal });
      this.cwdEmitter.dispose();
      this.exitEmitter.dispose();
      this.outputEmitter.dispose();
      this.resizeEmitter.dispose();
      this.markEmitter.dispose();
    });
  }

  private show(data: string | Buffer): void {
    this.outputEmitter.fire(typeof data === 'string' ? data : data.toString('utf8'));
    this.forward(typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
  }

  /** An agent's command is about to run in the shell (its request was accepted): see `agentRun`. */
  beginAgentRun(): void {
    this.agentRun = { marked: false, pending: [], held: [] };
  }

  /** Shows an agent command's bytes in the terminal (queued until the shell's `run:` mark went by). */
  showAgentOutput(chunk: Buffer): void {
    if (this.exited || !chunk.length) return;
    if (this.agentRun && !this.agentRun.marked) this.agentRun.pending.push(chunk);
    else this.show(chunk);
  }

  /** The agent's command ended: what was held back follows its output. */
  endAgentRun(): void {
    const run = this.agentRun;
    this.agentRun = null;
    if (!run || this.exited) return;
    for (const chunk of [...run.pending, ...run.held]) this.show(chunk);
  }

  /** Picks the tagged OSC 7 reports out of the output (they may be split across chunks). */
  private scanCwd(data: string, onCwd: (cwd: string) => void, onMark: (mark: TerminalMark) => void): void {
    let text = this.oscTail + data;
    for (;;) {
      const at = text.indexOf(this.tag);
      if (at < 0) break;
      const end = text.indexOf('\x07', at);
      if (end < 0) break;
      const cwd = text.slice(at + this.tag.length, end);
      if (cwd.startsWith('/')) onCwd(cwd);
      else if (/^pid:\d+$/.test(cwd) && this.remotePid === null) this.remotePid = Number(cwd.slice(4));
      else if (cwd.startsWith('dir:/')) onMark({ kind: 'dir', dir: cwd.slice(4) });
      else if (cwd === 'idle:' || cwd === 'busy:' || cwd === 'run:') onMark({ kind: cwd.slice(0, -1) as 'idle' | 'busy' | 'run' });
      text = text.slice(end + 1);
    }
    // Keep only what could be the start of a report still arriving.
    const partial = text.lastIndexOf('\x1b]7;');
    this.oscTail = partial >= 0 && text.length - partial < 8192 ? text.slice(partial) : '';
  }

  private forward(chunk: Buffer): void {
    this.scrollback.push(chunk);
    for (const sink of this.sinks) {
      sink.send(chunk, () => {
        if (this.paused && [...this.sinks].every((s) => s.bufferedAmount < HIGH_WATER / 4)) {
          this.paused = false;
          this.pty.resume();
        }
      });
      if (!this.paused && sink.bufferedAmount > HIGH_WATER) {
        this.paused = true;
        this.pty.pause();
      }
    }
  }

  /** Viewers attached now. */
  get viewers(): number {
    return this.sinks.size;
  }

  /** The PTY's size now (the last resize from any viewer). */
  get cols(): number {
    return this.size.cols;
  }

  get rows(): number {
    return this.size.rows;
  }

  /** Bytes of scrollback held for the next viewer. */
  get scrollbackBytes(): number {
    return this.scrollback.size;
  }

  /** The output a reattaching viewer would get now (a terminal reopened in place carries it over). */
  scrollbackSnapshot(): Buffer {
    return this.scrollback.snapshot();
  }

  /** Connects a viewer: the scrollback is replayed to it first, then it gets the live output. Dispose to detach. */
  attach(sink: TerminalSink): IDisposable {
    this.everAttached = true;
    const backlog = this.scrollback.snapshot();
    if (backlog.length) sink.send(backlog, () => undefined);
    this.sinks.add(sink);
    return {
      dispose: () => {
        this.sinks.delete(sink);
        // The viewer that held the shell back is gone.
        if (this.paused && [...this.sinks].every((s) => s.bufferedAmount < HIGH_WATER / 4)) {
          this.paused = false;
          if (!this.exited) this.pty.resume();
        }
      },
    };
  }

  write(data: string | Buffer): void {
    if (!this.exited) this.pty.write(typeof data === 'string' ? data : data.toString('utf8'));
  }

  resize(cols: number, rows: number): void {
    if (this.exited) return;
    this.size = { cols, rows };
    this.pty.resize(cols, rows);
    this.resizeEmitter.fire({ cols, rows });
  }

  /** The shell's PID inside the sandbox (null until it reported it). */
  get pid(): number | null {
    return this.remotePid;
  }

  /**
   * Ends the shell and what it started: its process tree inside the sandbox (by the PID it reported)
   * and the local PTY; `onExit` fires when it is gone.
   */
  dispose(): void {
    if (this.exited || this.disposing) return;
    this.disposing = true;
    if (this.remotePid === null) return this.pty.kill();
    // The tree first, while its processes are still the shell's children; the PTY after (bounded: killTree gives up after KILL_TREE_BOUND_MS).
    void killTree(this.env, this.user, this.remotePid, { includeRoot: true })
      .catch(() => undefined)
      .finally(() => {
        if (!this.exited) this.pty.kill();
      });
  }
}
