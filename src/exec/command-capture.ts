import { BoundedBuffer } from './bounded-buffer.js';
import type { Frame } from './frame-splitter.js';

/** Why the wrapper started where it did. */
export type EnterReason = 'ok' | 'missing' | 'denied' | 'notdir' | 'unenterable';

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
}

/** What a runner reports about one command before any policy is applied. */
export interface RawRun {
  stdout: Buffer;
  stderr: Buffer;
  truncated: { stdout: boolean; stderr: boolean };
  start: StartInfo | null;
  end: EndInfo | null;
  /** Exit status of the local transport process, when it ended during this command. */
  processExit: number | null;
  killed: 'timeout' | 'interrupt' | null;
  /** Stderr the transport printed before the wrapper started (e.g. "container is not running"). */
  transportError: string;
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
  transportError = '';

  constructor(readonly nonce: string, limit: number) {
    this.stdout = new BoundedBuffer(limit);
    this.stderr = new BoundedBuffer(limit);
  }

  get complete(): boolean {
    return this.end !== null && this.stderrDone;
  }

  stdoutPayload(chunk: Buffer): void {
    this.stdout.push(chunk);
  }

  stderrPayload(chunk: Buffer): void {
    // Before the start frame, stderr is the transport's own (docker/ssh errors), not the command's.
    if (!this.start) this.transportError += chunk.toString('utf8');
    else this.stderr.push(chunk);
  }

  frame(f: Frame): void {
    if (f.nonce !== this.nonce) return;
    const [type, a, b, rest] = f.fields;
    if (type === 'S') this.start = { pid: Number(a), why: (b as EnterReason) ?? 'ok', used: rest ?? '' };
    else if (type === 'E') this.end = { exitCode: Number(a), state: b === 'gone' ? 'gone' : 'ok', cwd: rest ?? '' };
    else if (type === 'X') this.stderrDone = true;
  }

  result(processExit: number | null, killed: RawRun['killed']): RawRun {
    return {
      stdout: this.stdout.bytes(),
      stderr: this.stderr.bytes(),
      truncated: { stdout: this.stdout.truncated, stderr: this.stderr.truncated },
      start: this.start,
      end: this.end,
      processExit,
      killed,
      transportError: this.transportError.trim(),
    };
  }
}
