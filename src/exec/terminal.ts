import { randomBytes } from 'node:crypto';
import { spawn as spawnPty, type IPty } from 'node-pty';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { remoteArgv } from './remote-argv.js';
import { ENTER_FUNCTION } from './wrapper-script.js';

/**
 * Starts an interactive login shell in the session's cwd (entered as the sandbox user, walking up
 * like every command does), and makes every prompt report the shell's physical cwd as an OSC 7
 * sequence tagged with a per-terminal nonce — the shell measuring itself, so the session's record
 * follows the human's `cd`s.
 *   bash -c TERMINAL_SCRIPT sandbox-desk <target> <tmpdir> <nonce>
 */
const TERMINAL_SCRIPT = `${ENTER_FUNCTION}
__sd_enter "$1" "$2"
[ "$__sd_why" = ok ] || printf 'sandbox-desk: %s is %s; starting in %s\\r\\n' "$1" "$__sd_why" "$__sd_used" >&2
export SDESK_OSC7_TAG="sdesk-$3"
__sdesk_osc7() { builtin printf '\\033]7;file://%s%s\\007' "$SDESK_OSC7_TAG" "$(builtin pwd -P 2>/dev/null)"; }
export -f __sdesk_osc7
export PROMPT_COMMAND=__sdesk_osc7 TERM=xterm-256color
unset -f __sd_enter __sd_cd
exec bash -l
`;

/** Above this many bytes waiting for the viewer, the PTY is paused (flow control). */
const HIGH_WATER = 1024 * 1024;
/** Output produced before a viewer attached is kept (up to this much) and replayed to it. */
const REPLAY_LIMIT = 256 * 1024;

export interface TerminalSink {
  send(data: Buffer, done: () => void): void;
  /** Bytes queued towards the viewer. */
  readonly bufferedAmount: number;
}

/** One terminal: a local PTY running `execPrefix({interactive:true})` + a login shell in the sandbox. */
export class TerminalSession {
  readonly id = randomBytes(12).toString('hex');
  private readonly pty: IPty;
  private readonly tag: string;
  private sink: TerminalSink | null = null;
  private replay: Buffer[] = [];
  private replayBytes = 0;
  private oscTail = '';
  private paused = false;
  exited = false;
  /** A viewer attached at least once (a terminal nobody ever attaches to is ended by the server). */
  everAttached = false;

  constructor(
    env: SandboxEnvironment,
    opts: { user?: string | undefined; target: string; cols: number; rows: number; onCwd: (cwd: string) => void; onExit?: () => void },
  ) {
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
    ]);
    this.pty = spawnPty(argv[0]!, argv.slice(1), {
      name: 'xterm-256color',
      cols: opts.cols,
      rows: opts.rows,
      env: process.env as Record<string, string>,
    });
    this.pty.onData((data) => {
      this.scanCwd(data, opts.onCwd);
      this.forward(Buffer.from(data, 'utf8'));
    });
    this.pty.onExit(() => {
      this.exited = true;
      opts.onExit?.();
    });
  }

  /** Picks the tagged OSC 7 reports out of the output (they may be split across chunks). */
  private scanCwd(data: string, onCwd: (cwd: string) => void): void {
    let text = this.oscTail + data;
    for (;;) {
      const at = text.indexOf(this.tag);
      if (at < 0) break;
      const end = text.indexOf('\x07', at);
      if (end < 0) break;
      const cwd = text.slice(at + this.tag.length, end);
      if (cwd.startsWith('/')) onCwd(cwd);
      text = text.slice(end + 1);
    }
    // Keep only what could be the start of a report still arriving.
    const partial = text.lastIndexOf('\x1b]7;');
    this.oscTail = partial >= 0 && text.length - partial < 8192 ? text.slice(partial) : '';
  }

  private forward(chunk: Buffer): void {
    if (!this.sink) {
      this.replay.push(chunk);
      this.replayBytes += chunk.length;
      while (this.replayBytes > REPLAY_LIMIT && this.replay.length > 1) this.replayBytes -= this.replay.shift()!.length;
      return;
    }
    const sink = this.sink;
    sink.send(chunk, () => {
      if (this.paused && sink.bufferedAmount < HIGH_WATER / 4) {
        this.paused = false;
        this.pty.resume();
      }
    });
    if (!this.paused && sink.bufferedAmount > HIGH_WATER) {
      this.paused = true;
      this.pty.pause();
    }
  }

  /** Connects the viewer; output produced so far is replayed first. */
  attach(sink: TerminalSink): void {
    this.sink = sink;
    this.everAttached = true;
    const backlog = Buffer.concat(this.replay);
    this.replay = [];
    this.replayBytes = 0;
    if (backlog.length) sink.send(backlog, () => undefined);
  }

  detach(): void {
    this.sink = null;
  }

  write(data: string | Buffer): void {
    if (!this.exited) this.pty.write(typeof data === 'string' ? data : data.toString('utf8'));
  }

  resize(cols: number, rows: number): void {
    if (!this.exited) this.pty.resize(cols, rows);
  }

  kill(): void {
    if (!this.exited) this.pty.kill();
  }
}
