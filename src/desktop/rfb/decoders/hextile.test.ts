import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../../shared/test/seeded-random.js';
import { ByteReader } from '../byte-reader.js';
import { Encoding } from '../protocol.js';
import { Framebuffer } from '../framebuffer.js';
import { byteByByte, randomSplit } from '../test/chunking.js';
import { decodeInChunks, wellBehaved } from '../test/decode.js';
import { hextileEncode, type TileMode } from '../test/hextile-encode.js';
import { HextileDecoder } from './hextile.js';
import type { Rect } from './decoder.js';

/** A screen of flat blocks in a few colours with a noisy corner: solid, one-colour and many-colour tiles. */
function picture(seed: number, width: number, height: number): number[] {
  const random = seededRandom(seed);
  const palette = [0x00102030, 0x00ff8000, 0x0000c0ff, 0x00ffffff];
  const blocks = new Map<string, number>();
  const px: number[] = [];
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const key = `${Math.floor(x / 11)},${Math.floor(y / 9)}`;
      if (!blocks.has(key)) blocks.set(key, palette[Math.floor(random() * palette.length)]!);
      px.push(x > width - 8 && y > height - 8 ? Math.floor(random() * 0xffffff) : blocks.get(key)!);
    }
  }
  return px;
}

/** What the rect must look like: the same pixels put as Raw rows. */
function reference(fbW: number, fbH: number, rect: Rect, px: number[]): Uint8Array {
  const fb = new Framebuffer(fbW, fbH);
  const raw = Buffer.alloc(px.length * 4);
  px.forEach((p, i) => raw.writeUInt32LE(p >>> 0, i * 4));
  fb.putBgrxRows(rect.x, rect.y, rect.width, rect.height, raw);
  return fb.data;
}

const MODES: TileMode[] = ['subrects', 'raw', 'fill', 'subrects', 'subrects', 'raw'];

describe('HextileDecoder', () => {
  // Odd sizes: partial tiles at the right and bottom edges.
  const rect: Rect = { x: 3, y: 2, width: 45, height: 37, encoding: Encoding.Hextile };
  const px = picture(1, rect.width, rect.height);
  const bytes = hextileEncode(rect.width, rect.height, px, (t) => MODES[t % MODES.length]!);

  it('paints raw, solid, carried-over background, foreground and coloured subrect tiles as the pixels they encode', () => {
    const fb = new Framebuffer(50, 40);
    expect(decodeInChunks(new HextileDecoder(), rect, fb, [bytes])).toEqual(wellBehaved(1));
    expect(Buffer.from(fb.data).equals(Buffer.from(reference(50, 40, rect, px)))).toBe(true);
    // Far fewer bytes than Raw for flat content.
    expect(bytes.length).toBeLessThan(rect.width * rect.height * 4);
  });

  it('decodes a rect cut into any chunks identically to one chunk (a tile waits for all its bytes)', () => {
    const want = reference(50, 40, rect, px);
    for (const chunks of [byteByByte(bytes), ...Array.from({ length: 20 }, (_, i) => randomSplit(bytes, 200 + i, 300))]) {
      const fb = new Framebuffer(50, 40);
      const label = `${chunks.length} chunks`;
      expect(decodeInChunks(new HextileDecoder(), rect, fb, chunks), label).toEqual(wellBehaved(chunks.length));
      expect(Buffer.from(fb.data).equals(Buffer.from(want)), label).toBe(true);
    }
  });

  it('starts each rect with fresh colours and leaves the next rect its bytes', () => {
    const second: Rect = { x: 0, y: 0, width: 16, height: 16, encoding: Encoding.Hextile };
    // Tile header 8 (subrects, no colours given): background and foreground are the rect's initial 0 (black).
    const b = Buffer.from([8, 1, 0x00, 0x00]);
    const fb = new Framebuffer(50, 40);
    const decoder = new HextileDecoder();
    const reader = new ByteReader();
    reader.push(Buffer.concat([bytes, b]));
    expect(decoder.decodeRect(reader, rect, fb)).toBe(true);
    expect(reader.available).toBe(b.length);
    expect(decoder.decodeRect(reader, second, fb)).toBe(true);
    expect(reader.available).toBe(0);
    expect([...fb.data.subarray(0, 4)]).toEqual([0, 0, 0, 255]);
  });

  it('refuses a tile header with undefined bits, a subrect outside its tile and a rect outside the framebuffer', () => {
    const one: Rect = { x: 0, y: 0, width: 4, height: 4, encoding: Encoding.Hextile };
    const bad =
      (payload: number[], r = one) =>
      () =>
        decodeInChunks(new HextileDecoder(), r, new Framebuffer(8, 8), [Buffer.from(payload)]);
    expect(bad([32])).toThrow(/tile header 32/);
    // A 4x4 tile with one 2x1 subrect at x=3: past the tile's right edge.
    expect(bad([2 | 4 | 8, 1, 2, 3, 0, 4, 5, 6, 0, 1, 0x30, 0x10])).toThrow(/subrect 2x1\+3\+0 lies outside its 4x4 tile/);
    expect(bad([0], { ...one, x: 6 })).toThrow(/outside the 8x8 framebuffer/);
  });

  it('takes an empty rect without reading anything', () => {
    const fb = new Framebuffer(4, 4);
    expect(
      decodeInChunks(new HextileDecoder(), { x: 0, y: 0, width: 0, height: 4, encoding: Encoding.Hextile }, fb, [Buffer.alloc(2)]),
    ).toEqual({
      answers: [true],
      left: 2,
    });
  });
});
