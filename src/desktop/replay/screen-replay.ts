import { closeSync, fstatSync, openSync, readdirSync, readSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { inflate as inflateCb, inflateSync } from 'node:zlib';
import { SandboxDeskError } from '../../shared/errors.js';
import type { ReplayFrame, ReplayScreenInfo } from '../../shared/replay-types.js';
import { encodeFrame, type FrameFormat } from '../screen/frame-encode.js';
import { fitFrame, scaleRgba } from '../screen/frame-geometry.js';
import { ReplayFramebuffer } from './replay-framebuffer.js';
import { MAGIC, RecordType, readPayload, scanRecords, segmentStart, type RecordRef } from './rfbrec-format.js';

const inflateAsync = promisify(inflateCb);
/**
 * Below this a record is inflated on the spot: a seek applies up to a few dozen small Hextile updates,
 * and a trip to libuv's pool for each cost more (on a loaded machine, milliseconds each) than inflating.
 */
const INFLATE_SYNC_BELOW = 256 * 1024;

function inflate(payload: Buffer): Promise<Buffer> | Buffer {
  return payload.length < INFLATE_SYNC_BELOW ? inflateSync(payload) : inflateAsync(payload);
}

/**
 * Reading a screen dir (rfbrec-format.ts): what is in it, the screen at a time t (the nearest
 * keyframe at or before t, then the updates up to t, decoded by our RFB decoders), and trimming the
 * oldest segments. Segment indexes (record headers only) are kept per file and extended as a file
 * grows, so a seek into a long recording reads one keyframe and the updates after it.
 */

/**
 * Between two segments the recorder did not mark as a break (a rotation, or a recording made before
 * the mark existed), a pause longer than this still reads as "not recorded then": the recorder ticks
 * every 2 s while connected, so only a stopped desktop leaves that much.
 */
const UNMARKED_GAP_MS = 10_000;

interface SegmentIndex {
  file: string;
  size: number;
  validBytes: number;
  records: RecordRef[];
  /** Indexes into records of the keyframes. */
  keyframes: number[];
  /** The recorder marked it as resuming after a break (a tick before its first keyframe, rfbrec-format.ts). */
  resumes: boolean;
}

const indexes = new Map<string, SegmentIndex>();

function readAt(file: string): { read: (offset: number, length: number) => Buffer; close: () => void; size: number } {
  const fd = openSync(file, 'r');
  return {
    size: fstatSync(fd).size,
    read: (offset, length) => {
      const b = Buffer.allocUnsafe(length);
      const n = readSync(fd, b, 0, length, offset);
      return n === length ? b : b.subarray(0, n);
    },
    close: () => closeSync(fd),
  };
}

/** The index of one segment file, extended from where it stopped if the file grew since. */
function indexOf(file: string): SegmentIndex {
  const f = readAt(file);
  try {
    const known = indexes.get(file);
    if (known && known.size === f.size) return known;
    if (known && f.size > known.size && known.records.length > 0) {
      // Only the part after the last whole record is new.
      const more = scanRecords(f.size - known.validBytes + MAGIC.length, (o, l) =>
        o < MAGIC.length ? MAGIC.subarray(o, o + l) : f.read(o - MAGIC.length + known.validBytes, l),
      );
      const shift = known.validBytes - MAGIC.length;
      for (const r of more.records) {
        if (startsScreen(r)) known.keyframes.push(known.records.length);
        known.records.push({ ...r, offset: r.offset + shift });
      }
      known.validBytes = more.validBytes + shift;
      known.size = f.size;
      return known;
    }
    const { records, validBytes } = scanRecords(f.size, f.read);
    const keyframes = records.flatMap((r, i) => (startsScreen(r) ? [i] : []));
    // A segment replays from its first keyframe: records before one (there are none when written by the recorder) are dropped.
    const first = records.findIndex((r) => r.type === RecordType.Keyframe);
    const usable = first < 0 ? [] : records.slice(first);
    const idx = {
      file,
      size: f.size,
      validBytes,
      records: usable,
      keyframes: first < 0 ? [] : keyframes.filter((k) => k >= first).map((k) => k - first),
      resumes: records.slice(0, Math.max(first, 0)).some((r) => r.type === RecordType.Tick),
    };
    indexes.set(file, idx);
    return idx;
  } finally {
    f.close();
  }
}

/** A record a seek can start from: a keyframe, or an update that repaints the whole screen. */
function startsScreen(r: RecordRef): boolean {
  return r.type === RecordType.Keyframe || r.type === RecordType.FullUpdate;
}

/** The segments of a screen dir, oldest first, with at least one keyframe. */
function segments(dir: string): SegmentIndex[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => segmentStart(n) !== undefined)
    .sort()
    .flatMap((n) => {
      try {
        const idx = indexOf(join(dir, n));
        return idx.records.length ? [idx] : [];
      } catch {
        return []; // removed meanwhile
      }
    });
}

function span(segs: SegmentIndex[]): { start: number; end: number } | null {
  const first = segs[0]?.records[0];
  const last = segs.at(-1)?.records.at(-1);
  return first && last ? { start: first.timeMs, end: last.timeMs } : null;
}

/** Each segment's record times (ms), oldest first: what a coverage figure (bench/recording-coverage.ts) is computed from. */
export function screenRecordTimes(dir: string): number[][] {
  return segments(dir).map((s) => s.records.map((r) => r.timeMs));
}

/** What is in a screen dir; null when nothing (replayable) is. */
export function screenRecordingInfo(dir: string): ReplayScreenInfo | null {
  const segs = segments(dir);
  const s = span(segs);
  if (!s) return null;
  const latest = segs.at(-1)!;
  const lastKey = latest.records.findLast((r) => r.type === RecordType.Keyframe)!;
  const f = readAt(latest.file);
  let size: { width: number; height: number };
  try {
    const p = f.read(lastKey.offset, 4);
    size = { width: p.readUInt16BE(0), height: p.readUInt16BE(2) };
  } finally {
    f.close();
  }
  return {
    startedAt: new Date(s.start).toISOString(),
    endedAt: new Date(s.end).toISOString(),
    ...size,
    keyframes: segs.reduce((n, g) => n + g.keyframes.length, 0),
    bytes: segs.reduce((n, g) => n + g.size, 0),
  };
}

/**
 * Removes the oldest segments until the screen dir holds at most keepBytes; returns the bytes
 * removed. The newest segment is never removed (the recorder may be writing it).
 */
export function trimScreenRecording(dir: string, keepBytes: number): number {
  let names: string[];
  try {
    names = readdirSync(dir)
      .filter((n) => segmentStart(n) !== undefined)
      .sort();
  } catch {
    return 0;
  }
  const sized = names.flatMap((n) => {
    try {
      return [{ file: join(dir, n), size: statSync(join(dir, n)).size }];
    } catch {
      return [];
    }
  });
  let total = sized.reduce((n, s) => n + s.size, 0);
  let removed = 0;
  for (const s of sized.slice(0, -1)) {
    if (total <= keepBytes) break;
    try {
      unlinkSync(s.file);
    } catch {
      continue;
    }
    indexes.delete(s.file);
    total -= s.size;
    removed += s.size;
  }
  return removed;
}

/** A stretch of a screen recording with no picture: the desktop was stopped (or restarted) between two segments. */
export interface ScreenGap {
  /** The last record before it and the first after it (ms). */
  from: number;
  to: number;
}

/**
 * The gap between two consecutive segments, or null when the second continues the first. A segment
 * the recorder marked as resuming after a break (a restart, a restore, a reconnection) is a gap
 * whatever its length: the viewer is told the screen was not recorded, even for two seconds. An
 * unmarked boundary is a gap only past UNMARKED_GAP_MS.
 */
function gapBetween(before: SegmentIndex, after: SegmentIndex): ScreenGap | null {
  const gap = { from: before.records.at(-1)!.timeMs, to: after.records[0]!.timeMs };
  if (gap.to <= gap.from) return null; // nothing between them to show
  return after.resumes || gap.to - gap.from > UNMARKED_GAP_MS ? gap : null;
}

/**
 * The gaps of a screen dir that overlap from–to, oldest first (gapBetween). moveTo refuses a time
 * inside one; an export draws a card there instead.
 */
export function screenGaps(dir: string, from: number, to: number): ScreenGap[] {
  const segs = segments(dir);
  const gaps: ScreenGap[] = [];
  for (let i = 0; i + 1 < segs.length; i++) {
    const gap = gapBetween(segs[i]!, segs[i + 1]!);
    if (gap && gap.from < to && gap.to > from) gaps.push(gap);
  }
  return gaps;
}

/**
 * Walks a screen dir's records forward: moveTo(t) leaves the framebuffer as it was at t, applying
 * only the records after its current position when t is ahead of it (playback, export), else
 * starting again from the nearest keyframe at or before t (a seek).
 */
export class ScreenCursor {
  readonly fb = new ReplayFramebuffer();
  private seg: SegmentIndex | undefined;
  private pos = -1;
  /** Time of the last keyframe or update applied. */
  shownAt = 0;

  constructor(private readonly dir: string) {}

  /** The recording's span now (re-reading the dir: it grows while recording); throws when there is none. */
  span(): { start: number; end: number } {
    const s = span(segments(this.dir));
    if (!s) throw new SandboxDeskError('not_found', `no screen recording in ${this.dir}`);
    return s;
  }

  async moveTo(t: number): Promise<void> {
    const segs = segments(this.dir);
    const s = span(segs);
    if (!s) throw new SandboxDeskError('not_found', `no screen recording in ${this.dir}`);
    if (!Number.isFinite(t)) throw new SandboxDeskError('invalid_input', 'the time asked for is not a valid date');
    if (t < s.start || t > s.end) {
      throw new SandboxDeskError(
        'invalid_input',
        `${iso(t)} is outside the screen recording, which spans ${iso(s.start)} – ${iso(s.end)}`,
        { hint: 'ask for a time inside that span', details: { startedAt: iso(s.start), endedAt: iso(s.end) } },
      );
    }
    const seg = [...segs].reverse().find((g) => g.records[0]!.timeMs <= t)!;
    const lastInSeg = seg.records.at(-1)!.timeMs;
    const next = segs[segs.indexOf(seg) + 1];
    // Past the segment's last record: the screen as it was, unless the next segment starts after a gap.
    if (t > lastInSeg && next && gapBetween(seg, next)) {
      throw new SandboxDeskError(
        'not_found',
        `the screen was not recorded at ${iso(t)} (a gap from ${iso(lastInSeg)} to ${iso(next.records[0]!.timeMs)}); the recording spans ${iso(s.start)} – ${iso(s.end)}`,
        {
          hint: `ask for a time before ${iso(lastInSeg)} or from ${iso(next.records[0]!.timeMs)} on; an export draws the gap as a card`,
        },
      );
    }
    const key = lastAtOrBefore(seg, t);
    const f = readAt(seg.file);
    try {
      const ahead = this.seg === seg && this.pos >= key && this.pos < seg.records.length && seg.records[this.pos]!.timeMs <= t;
      if (!ahead) {
        const k = seg.records[key]!;
        const p = readPayload(k, f.read);
        if (k.type === RecordType.FullUpdate) {
          // Its first rect (Raw or Hextile) covers the whole screen (x, y, width, height after the 4-byte header).
          const message = await inflate(p);
          const [width, height] = [message.readUInt16BE(8), message.readUInt16BE(10)];
          this.fb.keyframe(width, height, new Uint8Array(width * height * 4));
          this.fb.update(message);
        } else {
          this.fb.keyframe(p.readUInt16BE(0), p.readUInt16BE(2), await inflate(p.subarray(4)));
        }
        this.seg = seg;
        this.pos = key;
        this.shownAt = k.timeMs;
      }
      for (let i = this.pos + 1; i < seg.records.length && seg.records[i]!.timeMs <= t; i++) {
        const r = seg.records[i]!;
        if (r.type === RecordType.Update || r.type === RecordType.FullUpdate) {
          this.fb.update(await inflate(readPayload(r, f.read)));
          this.shownAt = r.timeMs;
        } else if (r.type === RecordType.Keyframe) {
          this.shownAt = r.timeMs; // the same pixels as the updates before it made
        }
        this.pos = i;
      }
    } finally {
      f.close();
    }
  }
}

/** The index of the last keyframe at or before t in a segment (its first record is one). */
function lastAtOrBefore(seg: SegmentIndex, t: number): number {
  let lo = 0;
  let hi = seg.keyframes.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (seg.records[seg.keyframes[mid]!]!.timeMs <= t) lo = mid;
    else hi = mid - 1;
  }
  return seg.keyframes[lo]!;
}

/** One cursor per recently read dir, so a viewer scrubbing forward (playback) applies only what is new. */
const cursors = new Map<string, { cursor: ScreenCursor; busy: Promise<unknown> }>();
const CURSORS_KEPT = 8;

function cursorFor(dir: string): { cursor: ScreenCursor; busy: Promise<unknown> } {
  let c = cursors.get(dir);
  if (c) cursors.delete(dir);
  c ??= { cursor: new ScreenCursor(dir), busy: Promise.resolve() };
  cursors.set(dir, c);
  for (const old of cursors.keys()) {
    if (cursors.size <= CURSORS_KEPT) break;
    cursors.delete(old);
  }
  return c;
}

/** The recorded screen at `at`: the last update at or before it, scaled into the maximum asked and encoded. */
export async function renderScreenAt(
  dir: string,
  at: Date,
  opts: { maxWidth?: number; maxHeight?: number; format?: FrameFormat } = {},
): Promise<Omit<ReplayFrame, 'sandbox' | 'askedAt'>> {
  const c = cursorFor(dir);
  // Calls on one dir take turns: they share the cursor's framebuffer.
  const run = c.busy.then(async () => {
    await c.cursor.moveTo(at.getTime());
    const { fb } = c.cursor;
    const g = fitFrame(fb.width, fb.height, opts);
    // No copy: calls on this cursor take turns, so nothing paints into the pixels while they are encoded.
    const rgba = scaleRgba(fb.data, g);
    const shownAt = c.cursor.shownAt;
    const format = opts.format ?? 'png';
    const image = await encodeReplayFrame(rgba, g.width, g.height, format);
    return { at: iso(shownAt), width: g.width, height: g.height, scale: g.scale, format, data: image.toString('base64') };
  });
  c.busy = run.catch(() => undefined);
  return run;
}

type Sharp = (typeof import('sharp'))['default'];
let sharpLoad: Promise<Sharp | null> | undefined;

/**
 * PNG through sharp (libvips, on its own threads: ~5 ms for 1280x800 where the JS encoder the live
 * screenshots use takes ~100 ms on a loaded machine) — a seek is mostly this; the pixels are the same.
 * JPEG/WebP, and PNG where sharp does not load, go through encodeFrame.
 */
async function encodeReplayFrame(rgba: Uint8Array, width: number, height: number, format: FrameFormat): Promise<Buffer> {
  if (format === 'png') {
    sharpLoad ??= import('sharp').then(
      (m) => m.default,
      () => null,
    );
    const sharp = await sharpLoad;
    if (sharp) {
      return sharp(Buffer.from(rgba.buffer, rgba.byteOffset, rgba.byteLength), { raw: { width, height, channels: 4 } })
        .png({ compressionLevel: 1, adaptiveFiltering: false })
        .toBuffer();
    }
  }
  return encodeFrame(rgba, width, height, format);
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
