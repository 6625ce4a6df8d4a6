import { describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { decodePngSize } from '../png-encode.js';
import { encodeFrame, type FrameFormat } from './frame-encode.js';

/** A 33x17 gradient: odd sizes, so row strides are not round. */
const W = 33;
const H = 17;
const rgba = new Uint8Array(W * H * 4).map((_, i) => (i % 4 === 3 ? 255 : (i * 7) & 0xff));

describe('encodeFrame', () => {
  it('encodes PNG, JPEG and WebP that decode to the frame size', async () => {
    expect(decodePngSize(await encodeFrame(rgba, W, H, 'png'))).toEqual({ width: W, height: H });
    for (const format of ['jpeg', 'webp'] as const) {
      const meta = await sharp(await encodeFrame(rgba, W, H, format, 70)).metadata();
      expect(meta).toMatchObject({ format, width: W, height: H });
    }
  });

  it('refuses an unknown format and a quality outside 1–100', async () => {
    await expect(encodeFrame(rgba, W, H, 'gif' as FrameFormat)).rejects.toThrow(/format must be one of png, jpeg, webp, got "gif"/);
    await expect(encodeFrame(rgba, W, H, 'jpeg', 0)).rejects.toThrow(/quality must be a whole number 1–100, got 0/);
  });
});
