import { describe, expect, it } from 'vitest';
import { MAGIC, RecordType, encodeRecord, readPayload, scanRecords, segmentName, segmentStart } from './rfbrec-format.js';

function file(...records: Buffer[]): { size: number; read: (o: number, l: number) => Buffer; bytes: Buffer } {
  const bytes = Buffer.concat([MAGIC, ...records]);
  return { bytes, size: bytes.length, read: (o, l) => bytes.subarray(o, o + l) };
}

describe('rfbrec format', () => {
  it('segment names sort by time and give their start back', () => {
    const names = [segmentName(1_700_000_000_123), segmentName(999), segmentName(1_700_000_000_122)];
    expect([...names].sort().map(segmentStart)).toEqual([999, 1_700_000_000_122, 1_700_000_000_123]);
    expect(segmentStart('seg-12.rfbrec.tmp')).toBeUndefined();
    expect(segmentStart('.recorder.lock')).toBeUndefined();
  });

  it('records round-trip: type, time, payload (CRC checked)', () => {
    const f = file(
      encodeRecord(RecordType.Keyframe, 1000, Buffer.from('key')),
      encodeRecord(RecordType.Update, 1000.5, Buffer.from('update!')),
      encodeRecord(RecordType.Tick, 3000, Buffer.alloc(0)),
    );
    const { records, validBytes } = scanRecords(f.size, f.read);
    expect(validBytes).toBe(f.size);
    expect(records.map((r) => [r.type, r.timeMs, readPayload(r, f.read).toString()])).toEqual([
      [RecordType.Keyframe, 1000, 'key'],
      [RecordType.Update, 1000.5, 'update!'],
      [RecordType.Tick, 3000, ''],
    ]);
  });

  it('stops at a torn tail: a length past the end, a half header, a last record whose CRC fails', () => {
    const a = encodeRecord(RecordType.Keyframe, 1, Buffer.from('aaaa'));
    const b = encodeRecord(RecordType.Update, 2, Buffer.from('bbbb'));
    const torn = file(a, b.subarray(0, b.length - 3));
    expect(scanRecords(torn.size, torn.read).records).toHaveLength(1);
    const half = file(a, b.subarray(0, 6));
    expect(scanRecords(half.size, half.read)).toMatchObject({ validBytes: MAGIC.length + a.length });
    const flipped = Buffer.from(b);
    flipped[flipped.length - 6]! ^= 0xff;
    const bad = file(a, flipped);
    expect(scanRecords(bad.size, bad.read).records).toHaveLength(1);
    // Not a recording at all.
    const junk = Buffer.from('not a recording');
    expect(scanRecords(junk.length, (o, l) => junk.subarray(o, o + l)).records).toEqual([]);
  });

  it('a corrupt record in the middle is refused when its payload is read', () => {
    const a = Buffer.from(encodeRecord(RecordType.Keyframe, 1, Buffer.from('aaaa')));
    a[a.length - 6]! ^= 0xff;
    const f = file(a, encodeRecord(RecordType.Update, 2, Buffer.from('bbbb')));
    const { records } = scanRecords(f.size, f.read);
    expect(records).toHaveLength(2);
    expect(() => readPayload(records[0]!, f.read)).toThrow(/corrupt screen recording record/);
  });
});
