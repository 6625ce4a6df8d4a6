import { closeSync, ftruncateSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { IDisposable } from '../shared/lifecycle.js';

/*
 * A terminal's recording as asciicast v2 (https://docs.asciinema.org/manual/asciicast/v2/): a header
 * line, then one `[time, code, data]` line per event. Written by hand, not with a library: the format
 * is three JSON shapes, and what matters here — whole lines written at once, so a crash leaves a file
 * that is valid up to its last line, and a full disk stops the recording without touching the
 * terminal — is ours to get right. Times are seconds after the header's `timestamp` (an integer, as
 * the spec says), so `timestamp + t` is the event's wall time to the microsecond; the replay's one
 * clock is wall time.
 */

export interface CastHeader {
  version: 2;
  width: number;
  height: number;
  /** Unix time (integer seconds) the event times count from. */
  timestamp: number;
  title?: string;
  env?: Record<string, string>;
}

/** What a recorded terminal needs to say about itself (TerminalSession has it; tests fake it). */
export interface CastSource {
  readonly id: string;
  readonly cols: number;
  readonly rows: number;
  onOutput(listener: (data: string) => void): IDisposable;
  onResize(listener: (size: { cols: number; rows: number }) => void): IDisposable;
  onExit(listener: (e: unknown) => void): IDisposable;
}

/** The env block of our casts: what asciinema records, plus the session the shell belonged to. */
export function castEnv(session: string): Record<string, string> {
  return { TERM: 'xterm-256color', SHELL: '/bin/bash', SANDBOX_DESK_SESSION: session };
}

/** The write a CastWriter does (fs.writeSync by default; a test passes one that fails like a full disk). */
export type WriteFn = (fd: number, text: string) => void;

const writeAll: WriteFn = (fd, text) => {
  const buf = Buffer.from(text, 'utf8');
  let off = 0;
  while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
};

/**
 * Appends one cast file, line by line. The first failure (ENOSPC, EIO …) ends the recording: the
 * file is cut back to its last whole line, `onStop` says why once, and later events are dropped.
 */
export class CastWriter implements IDisposable {
  private fd: number | null = null;
  private written = 0;
  private lastT = 0;
  readonly header: CastHeader;
  /** Why the recording stopped early, when it did. */
  stopped: string | null = null;

  constructor(
    readonly file: string,
    header: Omit<CastHeader, 'version' | 'timestamp'>,
    private readonly opts: { now?: () => number; write?: WriteFn; onStop?: (reason: string) => void } = {},
  ) {
    const startMs = this.now();
    this.header = { version: 2, ...header, timestamp: Math.floor(startMs / 1000) };
    try {
      mkdirSync(dirname(file), { recursive: true });
      this.fd = openSync(file, 'a');
    } catch (err) {
      this.stop(err);
      return;
    }
    this.line(JSON.stringify(this.header));
  }

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  get bytes(): number {
    return this.written;
  }

  /** Output from the terminal, as it arrived. */
  output(data: string): void {
    this.event('o', data);
  }

  resize(cols: number, rows: number): void {
    this.event('r', `${cols}x${rows}`);
  }

  private event(code: 'o' | 'r', data: string): void {
    if (this.fd === null) return;
    // Monotonic even if the wall clock steps back: a player needs times that never decrease.
    const t = Math.max(this.lastT, (this.now() - this.header.timestamp * 1000) / 1000);
    this.lastT = t;
    this.line(JSON.stringify([Number(t.toFixed(6)), code, data]));
  }

  private line(text: string): void {
    if (this.fd === null) return;
    try {
      (this.opts.write ?? writeAll)(this.fd, `${text}\n`);
      this.written += Buffer.byteLength(text, 'utf8') + 1;
    } catch (err) {
      // A part of the line may have reached the disk: cut back to the last whole line.
      try {
        ftruncateSync(this.fd, this.written);
      } catch {
        /* the file stays with a partial last line; readers skip it */
      }
      this.stop(err);
    }
  }

  private stop(err: unknown): void {
    if (this.fd !== null) {
      try {
        closeSync(this.fd);
      } catch {
        /* closing a file on a full disk can fail too; nothing else to do */
      }
      this.fd = null;
    }
    if (this.stopped) return;
    const code = (err as NodeJS.ErrnoException | undefined)?.code;
    this.stopped = code === 'ENOSPC' ? 'disk full (ENOSPC)' : err instanceof Error ? err.message : String(err);
    this.opts.onStop?.(this.stopped);
  }

  /** true while lines are still being written. */
  get open(): boolean {
    return this.fd !== null;
  }

  dispose(): void {
    if (this.fd === null) return;
    try {
      closeSync(this.fd);
    } catch {
      /* already gone */
    }
    this.fd = null;
  }
}

/**
 * Records a terminal into `file` from now until its shell ends: every output chunk and resize. A
 * recording that fails (disk full) stops with `onWarning`; the terminal is not affected.
 */
export function recordTerminal(
  terminal: CastSource,
  opts: {
    file: string;
    sandbox: string;
    session: string;
    onWarning?: (message: string) => void;
    onEnd?: () => void;
    now?: () => number;
    write?: WriteFn;
  },
): CastWriter {
  const writer = new CastWriter(
    opts.file,
    { width: terminal.cols, height: terminal.rows, title: `${opts.sandbox} · ${opts.session}`, env: castEnv(opts.session) },
    {
      now: opts.now,
      write: opts.write,
      onStop: (why) => opts.onWarning?.(`terminal ${terminal.id} recording stopped: ${why}; the terminal keeps working`),
    },
  );
  const subs = [terminal.onOutput((d) => writer.output(d)), terminal.onResize((s) => writer.resize(s.cols, s.rows))];
  terminal.onExit(() => {
    for (const s of subs) s.dispose();
    writer.dispose();
    opts.onEnd?.();
  });
  return writer;
}
