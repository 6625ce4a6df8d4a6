import { describe, expect, it } from 'vitest';
import { ByteReader } from './byte-reader.js';
import { byteByByte, everySplit, randomSplit } from './test/chunking.js';

/** u8 0xab, u16 0x1234, u32 0xdeadbeef, s32 -2, 3 bytes "xyz": 14 bytes. */
const sample = Buffer.from([0xab, 0x12, 0x34, 0xde, 0xad, 0xbe, 0xef, 0xff, 0xff, 0xff, 0xfe, 0x78, 0x79, 0x7a]);

function readSample(r: ByteReader): unknown[] {
  return [r.readU8(), r.readU16(), r.readU32(), r.readS32(), r.readBytes(3).toString('latin1')];
}

function readerOf(chunks: Buffer[]): ByteReader {
  const r = new ByteReader();
  for (const c of chunks) r.push(c);
  return r;
}

const expected = [0xab, 0x1234, 0xdeadbeef, -2, 'xyz'];

describe('ByteReader', () => {
  it('reads every width the same whichever boundary splits the bytes', () => {
    expect(readSample(readerOf([sample]))).toEqual(expected);
    for (const chunks of everySplit(sample)) expect(readSample(readerOf(chunks)), `split at ${chunks[0]!.length}`).toEqual(expected);
    expect(readSample(readerOf(byteByByte(sample)))).toEqual(expected);
    for (let seed = 1; seed <= 50; seed++) expect(readSample(readerOf(randomSplit(sample, seed, 4))), `seed ${seed}`).toEqual(expected);
  });

  it('peeks at any offset without consuming, across chunks', () => {
    const r = readerOf(byteByByte(sample));
    expect(r.peekU8()).toBe(0xab);
    expect(r.peekU16(1)).toBe(0x1234);
    expect(r.peekU32(3)).toBe(0xdeadbeef);
    expect(r.peekS32(7)).toBe(-2);
    expect(r.peek(3, 11).toString('latin1')).toBe('xyz');
    expect(r.available).toBe(sample.length);
    expect(r.consumed).toBe(0);
  });

  it('says whether n bytes are there, and counts what was consumed', () => {
    const r = new ByteReader();
    expect(r.has(0)).toBe(true);
    expect(r.has(1)).toBe(false);
    r.push(sample.subarray(0, 5));
    expect([r.has(5), r.has(6)]).toEqual([true, false]);
    r.readU8();
    r.skip(2);
    expect([r.available, r.consumed]).toEqual([2, 3]);
    r.push(Buffer.alloc(0)); // an empty chunk changes nothing
    r.push(sample.subarray(5));
    expect([r.available, r.consumed]).toEqual([11, 3]);
  });

  it('returns a view, not a copy, when the bytes lie in one chunk', () => {
    const chunk = Buffer.from('abcdef');
    const r = readerOf([chunk]);
    r.skip(1);
    const view = r.readBytes(3);
    expect(view.toString()).toBe('bcd');
    expect(view.buffer).toBe(chunk.buffer);
    expect(view.byteOffset).toBe(chunk.byteOffset + 1);
  });

  it('copies only the requested bytes when they straddle chunks', () => {
    const r = readerOf([Buffer.from('ab'), Buffer.from('cd'), Buffer.from('efgh')]);
    r.skip(1);
    const bytes = r.readBytes(4);
    expect(bytes.toString()).toBe('bcde');
    expect(bytes.length).toBe(4);
    expect(r.readBytes(3).toString()).toBe('fgh');
    expect(r.available).toBe(0);
  });

  it('discards up to n bytes, as many as are there', () => {
    const r = readerOf([Buffer.from('abc')]);
    expect(r.discard(10)).toBe(3);
    expect(r.discard(10)).toBe(0);
    r.push(Buffer.from('defg'));
    expect(r.discard(2)).toBe(2);
    expect(r.readBytes(2).toString()).toBe('fg');
    expect(r.consumed).toBe(7);
  });

  it('throws a clear RangeError when asked for bytes that are not queued', () => {
    const r = readerOf([Buffer.from([1, 2, 3])]);
    expect(() => r.readU32()).toThrow(new RangeError('ByteReader.peekU32 needs 4 bytes but only 3 are queued'));
    expect(() => r.readBytes(4)).toThrow(RangeError);
    expect(() => r.peekU8(3)).toThrow(/needs 4 bytes but only 3/);
    expect(() => r.skip(4)).toThrow(RangeError);
    expect(r.available).toBe(3); // a refused read consumes nothing
  });

  it('clear() drops everything queued', () => {
    const r = readerOf([sample]);
    r.clear();
    expect([r.available, r.has(1)]).toEqual([0, false]);
  });

  it('captures what is consumed as few views: reads that follow each other in one chunk become one view', () => {
    for (const chunks of [[sample], byteByByte(sample), ...Array.from({ length: 20 }, (_, i) => randomSplit(sample, 300 + i, 5))]) {
      const r = readerOf(chunks);
      r.startCapture();
      readSample(r);
      const parts = r.takeCapture();
      expect(Buffer.concat(parts).equals(sample)).toBe(true);
      // Separately allocated chunks are never merged with each other; reads inside one chunk always are.
      expect(parts.length).toBeLessThanOrEqual(chunks.length);
    }
    const one = readerOf([sample]);
    one.startCapture();
    readSample(one);
    expect(one.takeCapture()).toHaveLength(1);
  });
});
