import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../../shared/test/seeded-random.js';
import { Encoding } from '../protocol.js';
import { Framebuffer } from '../framebuffer.js';
import { byteByByte, everySplit, randomSplit } from '../test/chunking.js';
import { decodeInChunks, wellBehaved } from '../test/decode.js';
import { CopyRectDecoder } from './copyrect.js';
import type { Rect } from './decoder.js';

const W = 10;
const H = 8;

/** A framebuffer of seeded random pixels, so a copy from the wrong place shows. */
function noisy(seed: number): Framebuffer {
  const random = seededRandom(seed);
  const fb = new Framebuffer(W, H);
  fb.putBgrxRows(0, 0, W, H, Buffer.from(Array.from({ length: W * H * 4 }, () => Math.floor(random() * 256))));
  return fb;
}

function source(x: number, y: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt16BE(x, 0);
  b.writeUInt16BE(y, 2);
  return b;
}

/** What the copy must produce: every destination pixel from a snapshot of the source. */
function expectedCopy(before: Uint8Array, srcX: number, srcY: number, r: Rect): Uint8Array {
  const out = before.slice();
  for (let row = 0; row < r.height; row++) {
    for (let col = 0; col < r.width; col++) {
      const from = ((srcY + row) * W + srcX + col) * 4;
      out.set(before.subarray(from, from + 4), ((r.y + row) * W + r.x + col) * 4);
    }
  }
  return out;
}

describe('CopyRectDecoder', () => {
  const cases: [number, number, Rect][] = [
    [0, 0, { x: 2, y: 3, width: 6, height: 5, encoding: Encoding.CopyRect }], // down and right, overlapping
    [3, 2, { x: 1, y: 0, width: 7, height: 6, encoding: Encoding.CopyRect }], // up and left, overlapping
    [0, 1, { x: 5, y: 1, width: 5, height: 4, encoding: Encoding.CopyRect }], // same rows, side by side
  ];

  it('copies from the source, overlapping in either direction, as a snapshot copy would', () => {
    for (const [srcX, srcY, rect] of cases) {
      const fb = noisy(7);
      const want = expectedCopy(fb.data.slice(), srcX, srcY, rect);
      expect(decodeInChunks(new CopyRectDecoder(), rect, fb, [source(srcX, srcY)])).toEqual(wellBehaved(1));
      expect(Buffer.from(fb.data).equals(Buffer.from(want)), `from ${srcX},${srcY}`).toBe(true);
    }
  });

  it('decodes its header split at every byte boundary, or in random chunks, identically to one chunk', () => {
    const [srcX, srcY, rect] = cases[0]!;
    const whole = noisy(9);
    decodeInChunks(new CopyRectDecoder(), rect, whole, [source(srcX, srcY)]);
    const bytes = source(srcX, srcY);
    for (const chunks of [...everySplit(bytes), byteByByte(bytes), ...Array.from({ length: 10 }, (_, i) => randomSplit(bytes, i + 1, 3))]) {
      const fb = noisy(9);
      const label = chunks.map((c) => c.length).join('+');
      expect(decodeInChunks(new CopyRectDecoder(), rect, fb, chunks), label).toEqual(wellBehaved(chunks.length));
      expect(Buffer.from(fb.data).equals(Buffer.from(whole.data)), label).toBe(true);
    }
  });

  it('refuses a source or destination outside the framebuffer', () => {
    const rect: Rect = { x: 0, y: 0, width: 4, height: 4, encoding: Encoding.CopyRect };
    expect(() => decodeInChunks(new CopyRectDecoder(), rect, noisy(1), [source(8, 0)])).toThrow(
      'RFB CopyRect source rect 4x4+8+0 lies outside the 10x8 framebuffer',
    );
    expect(() => decodeInChunks(new CopyRectDecoder(), { ...rect, y: 6 }, noisy(1), [source(0, 0)])).toThrow(
      'RFB CopyRect rect 4x4+0+6 lies outside the 10x8 framebuffer',
    );
  });
});
