import { describe, expect, it } from 'vitest';
import { checkPoint, fitFrame, frameToScreen, scaleRgba, screenToFrame } from './frame-geometry.js';

describe('fitFrame', () => {
  it('keeps the screen size without a maximum, and scales into XGA by one factor', () => {
    expect(fitFrame(1280, 800)).toEqual({ width: 1280, height: 800, screenWidth: 1280, screenHeight: 800, scale: 1 });
    const f = fitFrame(1280, 800, { maxWidth: 1024, maxHeight: 768 });
    expect(f).toMatchObject({ width: 1024, height: 640, scale: 0.8 });
  });

  it('never exceeds the maximum at odd sizes', () => {
    for (const [w, h, mw, mh] of [
      [1279, 801, 1023, 767],
      [997, 613, 500, 500],
      [321, 243, 7, 5],
    ] as const) {
      const f = fitFrame(w, h, { maxWidth: mw, maxHeight: mh });
      expect(f.width).toBeLessThanOrEqual(mw);
      expect(f.height).toBeLessThanOrEqual(mh);
      expect(f.scale).toBe(f.width / w);
    }
  });

  it('refuses 0 and fractions, saying what to do', () => {
    expect(() => fitFrame(1280, 800, { maxWidth: 0 })).toThrow(/maxWidth must be a positive whole number of pixels, got 0/);
    expect(() => fitFrame(1280, 800, { maxHeight: 1.5 })).toThrow(/maxHeight must be a positive whole number of pixels, got 1.5/);
    expect(() => fitFrame(1280, 800, { maxWidth: -3 })).toThrow(/leave maxWidth out for a full-size frame|positive whole number/);
  });

  it('"at most" above the screen is the screen at its own size, scale 1 — never an error', () => {
    // The case from issue 36: a screen a viewer shrank to 696x758, asked at most 800 wide.
    expect(fitFrame(696, 758, { maxWidth: 800 })).toEqual({ width: 696, height: 758, screenWidth: 696, screenHeight: 758, scale: 1 });
    expect(fitFrame(1280, 800, { maxWidth: 2000, maxHeight: 16384 })).toMatchObject({ width: 1280, height: 800, scale: 1 });
    expect(fitFrame(1280, 800, { maxHeight: 801 })).toMatchObject({ width: 1280, height: 800, scale: 1 });
    // One side above, the other below: the one below decides, aspect kept.
    expect(fitFrame(1280, 800, { maxWidth: 2000, maxHeight: 400 })).toMatchObject({ width: 640, height: 400, scale: 0.5 });
  });
});

describe('frame ↔ screen coordinates', () => {
  it('maps every frame pixel to the screen pixel the scaled image shows there (odd sizes)', () => {
    for (const [w, h, mw, mh] of [
      [1279, 801, 1023, 767],
      [997, 613, 333, 211],
      [1280, 800, 1024, 768],
    ] as const) {
      const g = fitFrame(w, h, { maxWidth: mw, maxHeight: mh });
      // A screen whose every pixel holds its own index: the scaled image then says which screen pixel each frame pixel shows.
      const screen = new Uint8Array(w * h * 4);
      new Uint32Array(screen.buffer).forEach((_, i, a) => (a[i] = i));
      const frame = new Uint32Array(scaleRgba(screen, g).buffer);
      for (let fy = 0; fy < g.height; fy += 7) {
        for (let fx = 0; fx < g.width; fx += 5) {
          const s = frameToScreen(g, fx, fy);
          expect(s.y * w + s.x).toBe(frame[fy * g.width + fx]);
          // And back: the screen pixel reports the frame pixel it came from.
          expect(screenToFrame(g, s.x, s.y)).toEqual({ x: fx, y: fy });
        }
      }
    }
  });

  it('is the identity at scale 1', () => {
    const g = fitFrame(641, 479);
    expect(frameToScreen(g, 640, 478)).toEqual({ x: 640, y: 478 });
    expect(screenToFrame(g, 0, 0)).toEqual({ x: 0, y: 0 });
  });
});

describe('checkPoint', () => {
  it('refuses points outside, negative or fractional, with the geometry', () => {
    const g = { width: 1024, height: 640 };
    expect(() => checkPoint(g, 1023, 639)).not.toThrow();
    expect(() => checkPoint(g, 1024, 0)).toThrow(/x 1024 is not a whole pixel inside the frame \(1024x640/);
    expect(() => checkPoint(g, -1, 0)).toThrow(/x -1/);
    expect(() => checkPoint(g, 3, 2.5)).toThrow(/y 2.5/);
  });
});
