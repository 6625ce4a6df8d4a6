import { BoundedBuffer } from './bounded-buffer.js';
import { withoutShellErrorPrefix } from './shell-error-prefix.js';
import { decodeFramePath, frameFieldBytes, type Frame } from './frame-splitter.js';

/** Why the wrapper started where it did. */
export type EnterReason = 'ok' | 'missing' | 'denied' | 'notdir' | 'unenterable';

const ENTER_REASONS: readonly EnterReason[] = ['ok', 'missing', 'denied', 'notdir', 'unenterable'];

function isInt(s: string | undefined): s is string {
  return s !== undefined && /^[0-9]{1,10}$/.test(s);
}

export interface StartInfo {
  /** The pid of the shell running the command inside the sandbox (for the kill on timeout). */
  pid: number;
  why: EnterReason;
  used: string;
}

export interface EndInfo {
  exitCode: number;
  /** `gone`: the directory the command ended in no longer exists. */
  state: 'ok' | 'gone';
  cwd: string;
  /**
   * The directory's name is not valid UTF-8: `cwd` is only an approximation (U+FFFD for the odd bytes)
   * and must not be recorded or reported as observed.
   */
  notUtf8?: true;
}

/** What a runner reports about one command before any policy is applied. */
export interface RawRun {
  stdout: Buffer;
  stderr: Buffer;
  truncated: { stdout: boolean; stderr: boolean };
  /** Bytes each stream carried in all, kept or not. */
  totalBytes: { stdout: number; stderr: number };
  start: StartInfo | null;
  end: EndInfo | null;
  /** Exit status of the local transport process, when it ended during this command. */
  processExit: number | null;
  killed: 'timeout' | 'interrupt' | null;
  /** Stderr the transport printed before the wrapper started (e.g. "container is not running"). */
  transportError: string;
  /**
   * Why the wrapper's framing cannot be trusted for this command (a malformed, duplicated or cut
   * frame), or null. When set, the cwd is not observed: the frames may not be the wrapper's.
   */
  framingBroken: string | null;
}

export interface RunRequest {
  target: string;
  tmpDir: string;
  command: string;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  maxOutputBytes: number;
}

/** Collects one command's output and frames; complete once both streams reported their end. */
export class CommandCapture {
  readonly stdout: BoundedBuffer;
  readonly stderr: BoundedBuffer;
  start: StartInfo | null = null;
  end: EndInfo | null = null;
  stderrDone = false;
  /** Whole chunks, decoded once at the end: a character split across chunks stays whole. */
  private readonly transportChunks: Buffer[] = [];
  framingBroken: string | null = null;
  /** A note from the runner itself ("could not run docker: …"). */
  transportNote = '';

  /** The stdout begin frame came: stdout bytes from here on are the command's. */
  begun = false;

  constructor(
    readonly nonce: string,
    limit: number,
    /**
     * Output of a long-lived shell that came before this command's begin frames (S on stderr, B on
     * stdout): an earlier command's background job printed it. Given here, never to this command.
     * Without it (one-shot: a fresh process, nothing earlier), stdout keeps it and stderr before the
     * start frame is the transport's own.
     */
    private readonly onLate?: (stream: 'stdout' | 'stderr', chunk: Buffer) => void,
  ) {
    this.stdout = new BoundedBuffer(limit);
    this.stderr = new BoundedBuffer(limit);
  }

  get complete(): boolean {
    return this.end !== null && this.stderrDone;
  }

  stdoutPayload(chunk: Buffer): void {
    if (!this.begun && this.onLate) this.onLate('stdout', chunk);
    else this.stdout.push(chunk);
  }

  stderrPayload(chunk: Buffer): void {
    // Before the start frame, stderr is the transport's own (docker/ssh errors), not the command's;
    // in a shell that is up, it is an earlier command's late output.
    if (!this.start && this.onLate) this.onLate('stderr', chunk);
    else if (!this.start) this.transportChunks.push(Buffer.from(chunk));
    else this.stderr.push(chunk);
  }

  /** The splitter saw bytes with this command's nonce that were not a frame. */
  broken(why: string): void {
    this.framingBroken ??= why;
  }

  /** Takes a frame of this command; a malformed or repeated one marks the framing broken instead. */
  frame(f: Frame): void {
    if (f.nonce !== this.nonce) return;
    const [type, a, b, rest] = f.fields;
    if (type === 'S' && f.fields.length === 4) {
      const why = b as EnterReason;
      if (this.start) return this.broken('a second start frame');
      if (!isInt(a) || Number(a) <= 0 || !ENTER_REASONS.includes(why)) return this.broken(`a malformed start frame (${type}:${a}:${b})`);
      // The start dir came from a path we sent (or its ancestor, or the temp dir): UTF-8 in practice.
      this.start = { pid: Number(a), why, used: decodeFramePath(rest ?? '') ?? frameFieldBytes(rest ?? '').toString('utf8') };
    } else if (type === 'E' && f.fields.length === 4) {
      if (this.end) return this.broken('a second end frame');
      if (!isInt(a) || Number(a) > 255 || (b !== 'ok' && b !== 'gone') || !rest?.startsWith('/'))
        return this.broken(`a malformed end frame (${type}:${a}:${b})`);
      const cwd = decodeFramePath(rest);
      this.end =
        cwd !== null
          ? { exitCode: Number(a), state: b, cwd }
          : { exitCode: Number(a), state: b, cwd: frameFieldBytes(rest).toString('utf8'), notUtf8: true };
    } else if (type === 'B' && f.fields.length === 1) {
      if (this.begun) return this.broken('a second begin frame');
      this.begun = true;
    } else if (type === 'X' && f.fields.length === 1) {
      if (this.stderrDone) return this.broken('a second stderr-complete frame');
      this.stderrDone = true;
    } else {
      this.broken(`an unknown frame (${String(type).slice(0, 20)})`);
    }
  }

  result(processExit: number | null, killed: RawRun['killed']): RawRun {
    return {
      stdout: this.stdout.bytes(),
      stderr: withoutShellErrorPrefix(this.stderr.bytes()),
      truncated: { stdout: this.stdout.truncated, stderr: this.stderr.truncated },
      totalBytes: { stdout: this.stdout.total, stderr: this.stderr.total },
      start: this.start,
      end: this.end,
      processExit,
      killed,
      transportError: (Buffer.concat(this.transportChunks).toString('utf8') + this.transportNote).trim(),
      framingBroken: this.framingBroken,
    };
  }
}
