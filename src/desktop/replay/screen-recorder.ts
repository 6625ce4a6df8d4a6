import { mkdirSync, readdirSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { deflate as deflateCb } from 'node:zlib';
import { Emitter, type Event, type IDisposable } from '../../shared/lifecycle.js';
import { Encoding } from '../rfb/protocol.js';
import { MAGIC, RecordType, encodeRecord, keyframeHeader, segmentName, segmentStart } from './rfbrec-format.js';

const deflate = promisify(deflateCb);

/**
 * Records one desktop's screen into a screen dir (rfbrec-format.ts): every FramebufferUpdate the live
 * connection applies, as its wire bytes with the time, plus keyframes (the whole framebuffer) at the
 * start of each segment and whenever replaying from the last one would take too long. It never
 * blocks the RFB read loop: the tap only queues (views of the received bytes; a keyframe is one copy
 * of the framebuffer), and a pump compresses (zlib on libuv's threads) and appends in batches.
 *
 * Disk full (ENOSPC) or any other write error stops the recording with a warning; the desktop and
 * its live connection go on. A queue that grows past MAX_QUEUED_BYTES (a disk slower than the
 * screen) is dropped and the next update starts from a keyframe again, so the file stays replayable.
 */

/** What the recorder reads from a live connection (RfbClient has all of it). */
export interface RecordSource {
  readonly width: number;
  readonly height: number;
  /** A copy of the framebuffer, RGBA. */
  framebuffer(): Uint8Array;
  /** true while an update is half applied (no keyframe can be taken then). */
  readonly updating: boolean;
  /** Pixels painted by all updates so far (rect areas): what replaying them costs. */
  readonly paintedPixels: number;
  readonly onServerUpdate: Event<readonly Buffer[]>;
  readonly onClose: Event<Error | undefined>;
}

/** Where segments are written: an injected one lets tests fail writes (ENOSPC). */
export interface SegmentWriter {
  open(file: string): Promise<{ write(data: Buffer): Promise<void>; close(): Promise<void> }>;
}

export const fileSegmentWriter: SegmentWriter = {
  async open(file) {
    const h = await open(file, 'a');
    return {
      write: async (data) => {
        await h.write(data);
      },
      close: () => h.close(),
    };
  },
};

export interface RecordingStatus {
  on: boolean;
  bytes: number;
  /** ISO time recording (re)started in this process; null when off. */
  since: string | null;
  /** Why it stopped when it stopped on its own (disk full …). */
  warning: string | null;
}

export interface ScreenRecorderOptions {
  dir: string;
  /** A keyframe at least this often while the screen changes (default 10 s). */
  keyframeIntervalMs?: number;
  /**
   * A keyframe once the updates since the last one painted this many screens' worth of pixels
   * (default 8): a seek decodes at most that much after inflating a keyframe. Pixels, not bytes: a
   * Hextile update of a whole screen can be 10 KB and still cost a screen's painting to replay.
   */
  keyframeEveryScreens?: number;
  /** A new segment this often (default 2 min) or past segmentMaxBytes (default 64 MiB). */
  segmentMs?: number;
  segmentMaxBytes?: number;
  /** A tick record after this long without one (default 2 s): an idle screen's recording still reaches "now". */
  tickMs?: number;
  writer?: SegmentWriter;
  now?: () => number;
}

const MAX_QUEUED_BYTES = 96 * 1024 * 1024;

type Queued =
  | { kind: 'segment'; startMs: number }
  | { kind: 'keyframe'; timeMs: number; width: number; height: number; rgba: Uint8Array }
  | { kind: 'update'; timeMs: number; parts: readonly Buffer[]; bytes: number; full: boolean }
  | { kind: 'tick'; timeMs: number };

export class ScreenRecorder implements IDisposable {
  private readonly opts: Required<Omit<ScreenRecorderOptions, 'dir'>>;
  private queue: Queued[] = [];
  private queuedBytes = 0;
  private pumping: Promise<void> | undefined;
  private source: { src: RecordSource; subs: IDisposable[] } | undefined;
  private on = true;
  private warning: string | null = null;
  private readonly since: string;
  private bytes: number;
  private segStartMs = -1;
  /** The newest segment's start, kept across a break (segStartMs is -1 then): a name is never reused. */
  private lastSegStartMs = -1;
  private segBytes = 0;
  private lastKeyMs = -1;
  /** src.paintedPixels at the last seek point (a keyframe or a full repaint). */
  private paintedAtKey = 0;
  private lastRecordMs = 0;
  private needKeyframe = true;
  private readonly ticker: NodeJS.Timeout;
  private readonly changed = new Emitter<void>();
  /** Started, stopped (by stop() or on its own, with a warning), or a segment began. */
  readonly onDidChange: Event<void> = this.changed.event;

  constructor(
    private readonly dir: string,
    opts: Omit<ScreenRecorderOptions, 'dir'> = {},
  ) {
    this.opts = {
      keyframeIntervalMs: opts.keyframeIntervalMs ?? 10_000,
      keyframeEveryScreens: opts.keyframeEveryScreens ?? 8,
      segmentMs: opts.segmentMs ?? 120_000,
      segmentMaxBytes: opts.segmentMaxBytes ?? 64 * 1024 * 1024,
      tickMs: opts.tickMs ?? 2000,
      writer: opts.writer ?? fileSegmentWriter,
      now: opts.now ?? Date.now,
    };
    mkdirSync(dir, { recursive: true });
    this.bytes = dirBytes(dir);
    this.since = new Date(this.opts.now()).toISOString();
    this.ticker = setInterval(() => this.tick(), Math.max(50, Math.floor(this.opts.tickMs / 2)));
    this.ticker.unref();
  }

  get status(): RecordingStatus {
    return { on: this.on, bytes: this.bytes, since: this.on ? this.since : null, warning: this.warning };
  }

  /** Records this connection from now on (a reconnection: a new segment, starting with a keyframe). */
  attach(src: RecordSource): void {
    if (!this.on || this.source?.src === src) return;
    this.detach();
    const subs = [src.onServerUpdate((parts) => this.onUpdate(src, parts)), src.onClose(() => this.detach(src))];
    this.source = { src, subs };
    this.segStartMs = -1;
    this.needKeyframe = true;
    if (!src.updating) this.keyframe(src, this.opts.now());
  }

  /** Stops following a connection (it closed); the recording goes on with the next one attached. */
  detach(src?: RecordSource): void {
    if (!this.source || (src && this.source.src !== src)) return;
    for (const s of this.source.subs) s.dispose();
    this.source = undefined;
    // What comes next (a reconnection) is a new segment after a break, not more of this one.
    this.segStartMs = -1;
  }

  /** Stops recording and writes what is queued. */
  async stop(warning?: string): Promise<void> {
    if (this.on) {
      this.on = false;
      if (warning) this.warning = warning;
      this.detach();
      clearInterval(this.ticker);
      this.changed.fire();
    }
    await this.flushed();
    await this.file?.close().catch(() => undefined);
    this.file = undefined;
  }

  /** Resolves once everything queued so far is on disk (or dropped by a stop). */
  async flushed(): Promise<void> {
    while (this.pumping) await this.pumping;
  }

  dispose(): void {
    void this.stop();
    this.changed.dispose();
  }

  // ---- the tap (on the RFB read loop: queue only) ----

  private onUpdate(src: RecordSource, parts: readonly Buffer[]): void {
    const now = this.opts.now();
    const bytes = parts.reduce((n, p) => n + p.length, 0);
    if (this.segStartMs >= 0 && !this.needKeyframe) {
      const full = repaintsAll(parts, src.width, src.height);
      this.enqueue({ kind: 'update', timeMs: now, parts, bytes, full }, bytes);
      // A full repaint is a starting point for seeks: no keyframe needed for a while.
      if (full) {
        this.lastKeyMs = now;
        this.paintedAtKey = src.paintedPixels;
      }
    }
    const screenPixels = Math.max(1, src.width * src.height);
    if (
      this.needKeyframe ||
      this.segStartMs < 0 ||
      now - this.lastKeyMs >= this.opts.keyframeIntervalMs ||
      src.paintedPixels - this.paintedAtKey >= this.opts.keyframeEveryScreens * screenPixels ||
      now - this.segStartMs >= this.opts.segmentMs ||
      this.segBytes >= this.opts.segmentMaxBytes
    ) {
      this.keyframe(src, now);
    }
  }

  private tick(): void {
    const src = this.source?.src;
    // No connection, no clock: a tick says "the screen was as it was until now", which nobody saw while
    // the desktop restarted. Ticking on would stretch the last segment over the break and hide the gap.
    if (!this.on || !src) return;
    const now = this.opts.now();
    // An idle screen still rotates segments (the oldest can then go), between updates only.
    if (!src.updating && this.segStartMs >= 0 && now - this.segStartMs >= this.opts.segmentMs) {
      this.keyframe(src, now);
      return;
    }
    if (this.segStartMs >= 0 && now - this.lastRecordMs >= this.opts.tickMs) this.enqueue({ kind: 'tick', timeMs: now }, 0);
  }

  /**
   * A keyframe; it starts a new segment when the segment is due (or there is none). A segment begun
   * with none before it — this recorder's first, after a reconnection, after a dropped queue — resumes
   * after a break: a tick before its keyframe says so (rfbrec-format.ts), so a reader shows the gap
   * however short it was. A segment that is only due (a rotation) continues the last one, unmarked.
   */
  private keyframe(src: RecordSource, now: number): void {
    if (src.width === 0 || src.height === 0) return;
    const resumes = this.segStartMs < 0;
    const newSegment = resumes || now - this.segStartMs >= this.opts.segmentMs || this.segBytes >= this.opts.segmentMaxBytes;
    if (newSegment) {
      // Segment names are their start ms: never reuse one (two starts in the same ms).
      this.segStartMs = Math.max(now, this.lastSegStartMs + 1);
      this.lastSegStartMs = this.segStartMs;
      this.segBytes = 0;
      this.enqueue({ kind: 'segment', startMs: this.segStartMs }, 0);
      if (resumes) this.enqueue({ kind: 'tick', timeMs: now }, 0);
    }
    const rgba = src.framebuffer();
    this.enqueue({ kind: 'keyframe', timeMs: now, width: src.width, height: src.height, rgba }, rgba.length);
    this.lastKeyMs = now;
    this.paintedAtKey = src.paintedPixels;
    this.needKeyframe = false;
  }

  private enqueue(item: Queued, bytes: number): void {
    if (!this.on) return;
    this.lastRecordMs = 'timeMs' in item ? item.timeMs : this.lastRecordMs;
    if (this.queuedBytes + bytes > MAX_QUEUED_BYTES) {
      // The disk falls behind the screen: drop what waits and start again from a keyframe (a gap, never a wrong frame).
      this.queue = [];
      this.queuedBytes = 0;
      this.needKeyframe = true;
      this.segStartMs = -1;
      return;
    }
    this.queue.push(item);
    this.queuedBytes += bytes;
    this.pumping ??= this.pump().finally(() => (this.pumping = undefined));
  }

  // ---- the pump (off the read loop) ----

  private file: { write(data: Buffer): Promise<void>; close(): Promise<void> } | undefined;

  private async pump(): Promise<void> {
    try {
      while (this.queue.length) {
        const batch = this.queue;
        this.queue = [];
        this.queuedBytes = 0;
        const out: Buffer[] = [];
        const write = async () => {
          if (!out.length) return;
          const data = Buffer.concat(out);
          out.length = 0;
          await this.file!.write(data);
          this.bytes += data.length;
          this.segBytes += data.length;
        };
        for (const item of batch) {
          if (item.kind === 'segment') {
            await write();
            await this.file?.close();
            this.file = undefined;
            const file = await this.opts.writer.open(join(this.dir, segmentName(item.startMs)));
            this.file = file;
            await file.write(MAGIC);
            this.bytes += MAGIC.length;
            this.changed.fire();
            continue;
          }
          if (!this.file) continue; // records before the first segment (none are queued so)
          out.push(await this.encode(item));
        }
        await write();
      }
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      this.queue = [];
      this.queuedBytes = 0;
      await this.file?.close().catch(() => undefined);
      this.file = undefined;
      const why = fsErrorText(e);
      await this.stopAfterError(`screen recording stopped: ${why}; the desktop keeps running`);
      return;
    }
    if (!this.on) {
      await this.file?.close().catch(() => undefined);
      this.file = undefined;
    }
  }

  private async stopAfterError(warning: string): Promise<void> {
    if (!this.on) return;
    this.on = false;
    this.warning = warning;
    this.detach();
    clearInterval(this.ticker);
    this.changed.fire();
  }

  private async encode(item: Exclude<Queued, { kind: 'segment' }>): Promise<Buffer> {
    switch (item.kind) {
      case 'keyframe': {
        const z = await deflate(item.rgba, { level: 1 });
        return encodeRecord(RecordType.Keyframe, item.timeMs, Buffer.concat([keyframeHeader(item.width, item.height), z]));
      }
      case 'update':
        return encodeRecord(
          item.full ? RecordType.FullUpdate : RecordType.Update,
          item.timeMs,
          await deflate(Buffer.concat(item.parts), { level: 1 }),
        );
      case 'tick':
        return encodeRecord(RecordType.Tick, item.timeMs, Buffer.alloc(0));
    }
  }
}

/**
 * Whether a FramebufferUpdate's first rect is Raw or Hextile over the whole width x height screen: it
 * repaints every pixel (a Hextile rect's tiles each fill or carry their whole area), whatever came before.
 */
export function repaintsAll(parts: readonly Buffer[], width: number, height: number): boolean {
  const head = Buffer.alloc(16);
  let filled = 0;
  for (const p of parts) {
    if (filled >= 16) break;
    filled += p.copy(head, filled, 0, Math.min(p.length, 16 - filled));
  }
  if (filled < 16 || head.readUInt16BE(2) === 0) return false;
  return (
    head.readUInt16BE(4) === 0 &&
    head.readUInt16BE(6) === 0 &&
    head.readUInt16BE(8) === width &&
    head.readUInt16BE(10) === height &&
    (head.readInt32BE(12) === Encoding.Raw || head.readInt32BE(12) === Encoding.Hextile)
  );
}

/** An fs error as a person reads it: `disk full (ENOSPC)`, `disk quota exceeded (EDQUOT)`, or its message. */
export function fsErrorText(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const known: Record<string, string> = {
    ENOSPC: 'disk full (ENOSPC)',
    EDQUOT: 'disk quota exceeded (EDQUOT)',
    EIO: 'input/output error (EIO)',
    EROFS: 'the disk is read-only (EROFS)',
  };
  return (e?.code && known[e.code]) || `${e?.code ? `${e.code}: ` : ''}${e?.message ?? String(err)}`;
}

/** Bytes of the segments in a screen dir (0 when there is none). */
export function dirBytes(dir: string): number {
  let n = 0;
  try {
    for (const name of readdirSync(dir)) {
      if (segmentStart(name) === undefined) continue;
      try {
        n += statSync(join(dir, name)).size;
      } catch {
        // removed meanwhile (trimmed)
      }
    }
  } catch {
    return 0;
  }
  return n;
}
