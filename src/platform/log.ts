import { closeSync, fstatSync, mkdirSync, openSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { pino, type Level, type Logger } from 'pino';
import type { IDisposable } from '../shared/lifecycle.js';

export type LogLevel = Level | 'silent';
export type { Logger };

/**
 * A size-rotated, append-only log file: `sandbox-desk.log`, then `.1` … `.N` (oldest dropped).
 *
 * Our own ~40 lines rather than pino-roll: pino-roll runs as a worker-thread transport, so a short CLI
 * call that exits right after an error can lose its last lines unless every exit path awaits a flush,
 * and each call would start a thread for a few lines. Here every line is one synchronous append
 * (O_APPEND, so the CLI, the Electron main process and `serve` may share the file), and rotation is a
 * rename. Before each write the file on disk is compared with the open one: if another process rotated
 * it, this one reopens instead of writing into `.1`.
 */
export class RotatingFile implements IDisposable {
  private fd: number | null = null;
  private ino = -1;

  constructor(
    readonly file: string,
    private readonly opts: { maxBytes: number; files: number },
  ) {}

  private open(): number {
    mkdirSync(dirname(this.file), { recursive: true, mode: 0o700 });
    this.fd = openSync(this.file, 'a', 0o600);
    this.ino = fstatSync(this.fd).ino;
    return this.fd;
  }

  private current(): number {
    if (this.fd !== null) {
      let onDisk = -2;
      try {
        onDisk = statSync(this.file).ino;
      } catch {
        // Removed or rotated away: reopen below.
      }
      if (onDisk === this.ino) return this.fd;
      closeSync(this.fd);
      this.fd = null;
    }
    return this.open();
  }

  private rotate(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    rmSync(`${this.file}.${this.opts.files}`, { force: true });
    for (let i = this.opts.files - 1; i >= 1; i--) {
      try {
        renameSync(`${this.file}.${i}`, `${this.file}.${i + 1}`);
      } catch {
        // That generation does not exist yet.
      }
    }
    try {
      renameSync(this.file, `${this.file}.1`);
    } catch {
      // Another process rotated it a moment ago.
    }
  }

  write(line: string): boolean {
    let fd = this.current();
    const size = fstatSync(fd).size;
    if (size > 0 && size + Buffer.byteLength(line) > this.opts.maxBytes) {
      this.rotate();
      fd = this.open();
    }
    writeSync(fd, line);
    return true;
  }

  dispose(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}

export interface AppLog extends IDisposable {
  readonly logger: Logger;
  readonly file: string;
}

/**
 * The app's one structured log (JSON lines, pino's fields: level, time, pid, msg, and the caller's
 * own, e.g. `component`, `plugin`). Every process writes to the same file; `component` says which.
 */
export function openLog(opts: { file: string; level: LogLevel; maxBytes: number; files: number; component: string }): AppLog {
  const dest = new RotatingFile(opts.file, opts);
  const logger = pino(
    { level: opts.level, base: { pid: process.pid, component: opts.component }, timestamp: pino.stdTimeFunctions.isoTime },
    dest,
  );
  return { logger, file: opts.file, dispose: () => dest.dispose() };
}

/** A logger that writes nowhere: cores opened by tests and library users that pass none. */
export const silentLogger: Logger = pino({ level: 'silent' });
