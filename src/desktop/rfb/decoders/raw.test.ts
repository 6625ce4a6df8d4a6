import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../../shared/test/seeded-random.js';
import { ByteReader } from '../byte-reader.js';
import { Encoding } from '../protocol.js';
import { Framebuffer } from '../framebuffer.js';
import { byteByByte, everySplit, randomSplit } from '../test/chunking.js';
import { decodeInChunks, wellBehaved } from '../test/decode.js';
import { RawDecoder } from './raw.js';
import type { Rect } from './decoder.js';

const rect: Rect = { x: 2, y: 1, width: 4, height: 3, encoding: Encoding.Raw };

/** BGRX pixels from a seeded PRNG, so every pixel differs and a misplaced byte shows. */
function payload(seed: number, r: Rect): Buffer {
  const random = seededRandom(seed);
  return Buffer.from(Array.from({ length: r.width * r.height * 4 }, () => Math.floor(random() * 256)));
}

function decodedOnce(bytes: Buffer, r = rect): Uint8Array {
  const fb = new Framebuffer(7, 5);
  expect(decodeInChunks(new RawDecoder(), r, fb, [bytes])).toEqual(wellBehaved(1));
  return fb.data;
}

describe('RawDecoder', () => {
  it('converts BGRX rows into RGBA at the rect position and leaves the rest black', () => {
    const bytes = payload(1, rect);
    const fb = decodedOnce(bytes);
    for (let y = 0; y < 5; y++) {
      for (let x = 0; x < 7; x++) {
        const at = (y * 7 + x) * 4;
        const inside = x >= 2 && x < 6 && y >= 1 && y < 4;
        const p = ((y - 1) * 4 + (x - 2)) * 4;
        const want = inside ? [bytes[p + 2], bytes[p + 1], bytes[p], 255] : [0, 0, 0, 255];
        expect([...fb.subarray(at, at + 4)], `pixel ${x},${y}`).toEqual(want);
      }
    }
  });

  it('decodes a rect split at every byte boundary, or in random chunks, identically to one chunk', () => {
    const bytes = payload(2, rect);
    const whole = decodedOnce(bytes);
    const splits = [...everySplit(bytes), byteByByte(bytes), ...Array.from({ length: 30 }, (_, i) => randomSplit(bytes, 100 + i, 9))];
    for (const chunks of splits) {
      const fb = new Framebuffer(7, 5);
      const label = chunks.map((c) => c.length).join('+');
      expect(decodeInChunks(new RawDecoder(), rect, fb, chunks), label).toEqual(wellBehaved(chunks.length));
      expect(Buffer.from(fb.data).equals(Buffer.from(whole)), label).toBe(true);
    }
  });

  it('is ready for the next rect once one is done, even when both arrive in one chunk', () => {
    const second: Rect = { x: 0, y: 3, width: 7, height: 2, encoding: Encoding.Raw };
    const a = payload(3, rect);
    const b = payload(4, second);
    const fb = new Framebuffer(7, 5);
    const decoder = new RawDecoder();
    const reader = new ByteReader();
    reader.push(Buffer.concat([a, b.subarray(0, 5)]));
    expect(decoder.decodeRect(reader, rect, fb)).toBe(true);
    expect(reader.available).toBe(5); // the second rect's bytes are left for it
    expect(decoder.decodeRect(reader, second, fb)).toBe(false);
    reader.push(b.subarray(5));
    expect(decoder.decodeRect(reader, second, fb)).toBe(true);
    const reference = new Framebuffer(7, 5);
    reference.putBgrxRows(rect.x, rect.y, rect.width, rect.height, a);
    reference.putBgrxRows(second.x, second.y, second.width, second.height, b);
    expect(Buffer.from(fb.data).equals(Buffer.from(reference.data))).toBe(true);
  });

  it('takes an empty rect without reading anything', () => {
    const fb = new Framebuffer(4, 4);
    expect(decodeInChunks(new RawDecoder(), { x: 4, y: 0, width: 0, height: 4, encoding: Encoding.Raw }, fb, [Buffer.alloc(3)])).toEqual({
      answers: [true],
      left: 3,
    });
  });

  it('refuses a rect outside the framebuffer before reading its pixels', () => {
    const fb = new Framebuffer(4, 4);
    expect(() =>
      decodeInChunks(new RawDecoder(), { x: 2, y: 0, width: 4, height: 1, encoding: Encoding.Raw }, fb, [Buffer.alloc(16)]),
    ).toThrow('RFB Raw rect 4x1+2+0 lies outside the 4x4 framebuffer');
  });
});
