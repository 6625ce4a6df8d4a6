/**
 * The screen recording's file format (`seg-<startEpochMs>.rfbrec`), written by hand because the format
 * is ours: no recording library records an RFB stream as the live connection applied it, with our
 * own keyframes beside it (vncrec/fbs files keep raw socket bytes without keyframes or a clock a
 * torn tail can be cut at).
 *
 *   file    = MAGIC (8 bytes, "RFBREC1\n") record*
 *   record  = u32 BE length (of what follows up to and including the CRC)
 *             u8 type, f64 BE time (epoch ms), payload, u32 BE CRC-32 of type+time+payload
 *   type 1  keyframe: u16 width, u16 height, deflate(RGBA pixels, width*height*4)
 *   type 2  update:   deflate(one whole server→client FramebufferUpdate message as it came over the
 *                     wire: Raw/CopyRect rects in 32 bpp BGRX, and DesktopSize pseudo-rects)
 *   type 3  tick:     empty — the screen was as it was until this time (an idle screen's clock)
 *   type 4  full update: as type 2, for an update whose first rect is Raw over the whole screen — it
 *                     repaints everything, so a seek may start from it as from a keyframe (an
 *                     animating screen then needs no keyframes of its own: none to compress twice)
 *
 * Every segment starts with a keyframe, so the oldest can be deleted and any segment replays alone.
 * A segment whose keyframe comes after a tick resumes after a break: the screen was not recorded
 * between the previous segment's last record and it (the recorder started, reconnected, or dropped
 * what it could not write), however short that was. One that starts with its keyframe continues the
 * previous segment (a rotation). Readers that predate the mark skip records before the first keyframe.
 * A crash mid-write leaves a torn last record: the reader stops at the first record whose length runs
 * past the end of the file or whose CRC does not match, so everything before it replays.
 */
import { crc32 } from 'node:zlib';

export const MAGIC = Buffer.from('RFBREC1\n', 'latin1');
export const SEGMENT_PREFIX = 'seg-';
export const SEGMENT_SUFFIX = '.rfbrec';

export const RecordType = {
  Keyframe: 1,
  Update: 2,
  Tick: 3,
  FullUpdate: 4,
} as const;
export type RecordType = (typeof RecordType)[keyof typeof RecordType];

/** length field + type + time + CRC. */
export const RECORD_OVERHEAD = 4 + 1 + 8 + 4;
/** The reader refuses a record claiming more (a corrupt length must not allocate gigabytes). */
export const MAX_RECORD_BYTES = 256 * 1024 * 1024;

/** The name of the segment that starts at `startMs`: zero-padded, so sorting by name is by time. */
export function segmentName(startMs: number): string {
  return `${SEGMENT_PREFIX}${String(Math.trunc(startMs)).padStart(15, '0')}${SEGMENT_SUFFIX}`;
}

/** The start time a segment's name carries, or undefined for a file that is not a segment. */
export function segmentStart(name: string): number | undefined {
  const m = /^seg-(\d{1,16})\.rfbrec$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** One framed record (payload already compressed where the type says so). */
export function encodeRecord(type: RecordType, timeMs: number, payload: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(RECORD_OVERHEAD + payload.length);
  out.writeUInt32BE(out.length - 4, 0);
  out.writeUInt8(type, 4);
  out.writeDoubleBE(timeMs, 5);
  out.set(payload, 13);
  out.writeUInt32BE(crc32(out.subarray(4, 13 + payload.length)), 13 + payload.length);
  return out;
}

/** A keyframe's payload header: u16 width, u16 height (the deflated pixels follow). */
export function keyframeHeader(width: number, height: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt16BE(width, 0);
  b.writeUInt16BE(height, 2);
  return b;
}

/** Where a record is in its file, as the index keeps it (its payload is read only when needed). */
export interface RecordRef {
  type: RecordType;
  timeMs: number;
  /** Offset and length of the payload in the file. */
  offset: number;
  length: number;
}

/**
 * Reads the record headers with `read(offset, length)` (positional file reads: 13 bytes a record, so a
 * long recording is indexed without reading its pixels), stopping at a torn tail: a record whose
 * length runs past `size` (the file's size), an unknown type, or a last record whose CRC does not
 * match (a crash tears only the tail). Other records' CRCs are checked when their payload is read
 * (readPayload).
 */
export function scanRecords(size: number, read: (offset: number, length: number) => Buffer): { records: RecordRef[]; validBytes: number } {
  const records: RecordRef[] = [];
  if (size < MAGIC.length || !read(0, MAGIC.length).equals(MAGIC)) return { records, validBytes: 0 };
  let at = MAGIC.length;
  let lastAt = at;
  while (at + 13 <= size) {
    const head = read(at, 13);
    const len = head.readUInt32BE(0);
    if (len < RECORD_OVERHEAD - 4 || len > MAX_RECORD_BYTES || at + 4 + len > size) break;
    const type = head.readUInt8(4);
    if (type < RecordType.Keyframe || type > RecordType.FullUpdate) break;
    records.push({ type: type as RecordType, timeMs: head.readDoubleBE(5), offset: at + 13, length: len - 13 });
    lastAt = at;
    at += 4 + len;
  }
  const last = records.at(-1);
  if (last && !crcMatches(read(lastAt + 4, last.length + 13))) {
    records.pop();
    at = lastAt;
  }
  return { records, validBytes: at };
}

function crcMatches(body: Buffer): boolean {
  return body.length >= 13 && crc32(body.subarray(0, body.length - 4)) === body.readUInt32BE(body.length - 4);
}

/** A record's payload, its CRC checked (`read` as for scanRecords); throws on a corrupt record. */
export function readPayload(ref: RecordRef, read: (offset: number, length: number) => Buffer): Buffer {
  const body = read(ref.offset - 9, ref.length + 13);
  if (!crcMatches(body)) throw new Error(`corrupt screen recording record at byte ${ref.offset - 13} (CRC mismatch)`);
  return body.subarray(9, 9 + ref.length);
}
