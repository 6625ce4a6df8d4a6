import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../shared/test/seeded-random.js';
import { Framebuffer } from './framebuffer.js';

function pixel(fb: Framebuffer, x: number, y: number): number[] {
  const at = (y * fb.width + x) * 4;
  return [...fb.data.subarray(at, at + 4)];
}

describe('Framebuffer', () => {
  it('starts opaque black', () => {
    const fb = new Framebuffer(3, 2);
    expect(fb.data.length).toBe(3 * 2 * 4);
    expect(pixel(fb, 2, 1)).toEqual([0, 0, 0, 255]);
  });

  it('writes BGRX rows as RGBA with full alpha, from an offset into the data', () => {
    const fb = new Framebuffer(4, 3);
    // One junk byte first, then two rows of two pixels: (b, g, r, x).
    const data = Buffer.from([9, 1, 2, 3, 0, 4, 5, 6, 0, 7, 8, 9, 0, 10, 11, 12, 0]);
    fb.putBgrxRows(1, 1, 2, 2, data, 1);
    expect([pixel(fb, 1, 1), pixel(fb, 2, 1), pixel(fb, 1, 2), pixel(fb, 2, 2)]).toEqual([
      [3, 2, 1, 255],
      [6, 5, 4, 255],
      [9, 8, 7, 255],
      [12, 11, 10, 255],
    ]);
    expect(pixel(fb, 0, 1)).toEqual([0, 0, 0, 255]);
    expect(pixel(fb, 3, 2)).toEqual([0, 0, 0, 255]);
  });

  it('converts every pixel exactly, whatever the alignment of the data (the 32-bit path and its aligned copy)', () => {
    const random = seededRandom(7);
    const [w, h] = [13, 9];
    for (let offset = 0; offset < 8; offset++) {
      const rect = { x: 2, y: 1, width: 11, height: 7 };
      const data = new Uint8Array(offset + rect.width * rect.height * 4);
      for (let i = 0; i < data.length; i++) data[i] = Math.floor(random() * 256);
      const fb = new Framebuffer(w, h);
      // A view starting at an odd place in its buffer too, as rows cut out of a received chunk are.
      fb.putBgrxRows(rect.x, rect.y, rect.width, rect.height, data.subarray(0), offset);
      for (let y = 0; y < h; y++)
        for (let x = 0; x < w; x++) {
          const inside = x >= rect.x && x < rect.x + rect.width && y >= rect.y && y < rect.y + rect.height;
          const p = offset + ((y - rect.y) * rect.width + (x - rect.x)) * 4;
          expect(pixel(fb, x, y)).toEqual(inside ? [data[p + 2], data[p + 1], data[p], 255] : [0, 0, 0, 255]);
        }
    }
  });

  it('copies overlapping areas downwards without smearing', () => {
    const fb = new Framebuffer(1, 4);
    fb.putBgrxRows(0, 0, 1, 4, Buffer.from([0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0]));
    fb.copyRect(0, 0, { x: 0, y: 1, width: 1, height: 3 });
    expect([0, 1, 2, 3].map((y) => pixel(fb, 0, y)[0])).toEqual([1, 1, 2, 3]);
  });

  it('resizes keeping the overlapping top-left part, and says whether the size changed', () => {
    const fb = new Framebuffer(2, 2);
    fb.putBgrxRows(0, 0, 2, 2, Buffer.from([0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0]));
    expect(fb.resize(2, 2)).toBe(false);
    expect(fb.resize(3, 1)).toBe(true);
    expect([fb.width, fb.height]).toEqual([3, 1]);
    expect([pixel(fb, 0, 0)[0], pixel(fb, 1, 0)[0], pixel(fb, 2, 0)]).toEqual([1, 2, [0, 0, 0, 255]]);
  });

  it('names the rect and the framebuffer size when a rect lies outside', () => {
    const fb = new Framebuffer(4, 4);
    expect(() => fb.checkBounds('Raw', { x: 0, y: 0, width: 4, height: 4 })).not.toThrow();
    expect(() => fb.checkBounds('Raw', { x: 1, y: 3, width: 3, height: 2 })).toThrow(
      'RFB Raw rect 3x2+1+3 lies outside the 4x4 framebuffer',
    );
  });

  it('fills an area with one BGRX pixel as RGBA, and nothing outside it', () => {
    const fb = new Framebuffer(5, 4);
    fb.fillBgrx(1, 1, 3, 2, 0xff102030); // X=ff R=10 G=20 B=30
    for (let y = 0; y < 4; y++) {
      for (let x = 0; x < 5; x++) {
        const inside = x >= 1 && x < 4 && y >= 1 && y < 3;
        const at = (y * 5 + x) * 4;
        expect([...fb.data.subarray(at, at + 4)], `pixel ${x},${y}`).toEqual(inside ? [0x10, 0x20, 0x30, 255] : [0, 0, 0, 255]);
      }
    }
  });
});
