import { describe, expect, it } from 'vitest';
import { DesktopSizeStatus, Encoding } from '../rfb/protocol.js';
import { ReplayFramebuffer } from './replay-framebuffer.js';

/** A FramebufferUpdate message from rect headers and payloads. */
function update(...rects: { x: number; y: number; w: number; h: number; enc: number; payload?: Buffer }[]): Buffer {
  const head = Buffer.from([0, 0, 0, rects.length]);
  const parts = rects.flatMap((r) => {
    const h = Buffer.alloc(12);
    h.writeUInt16BE(r.x, 0);
    h.writeUInt16BE(r.y, 2);
    h.writeUInt16BE(r.w, 4);
    h.writeUInt16BE(r.h, 6);
    h.writeInt32BE(r.enc, 8);
    return [h, r.payload ?? Buffer.alloc(0)];
  });
  return Buffer.concat([head, ...parts]);
}

const bgrx = (n: number, [r, g, b]: [number, number, number]) => Buffer.from(Array.from({ length: n }, () => [b, g, r, 0]).flat());
const screens = (w: number, h: number) => {
  const b = Buffer.alloc(4 + 16);
  b[0] = 1;
  b.writeUInt16BE(w, 4 + 8);
  b.writeUInt16BE(h, 4 + 10);
  return b;
};

describe('ReplayFramebuffer', () => {
  it('applies Raw and CopyRect rects and size changes as the live client does', () => {
    const fb = new ReplayFramebuffer();
    fb.keyframe(4, 2, new Uint8Array(4 * 2 * 4).fill(255));
    fb.update(update({ x: 0, y: 0, w: 2, h: 1, enc: Encoding.Raw, payload: bgrx(2, [10, 20, 30]) }));
    expect(Array.from(fb.data.subarray(0, 8))).toEqual([10, 20, 30, 255, 10, 20, 30, 255]);
    const copy = Buffer.alloc(4);
    copy.writeUInt16BE(0, 0);
    copy.writeUInt16BE(0, 2);
    fb.update(update({ x: 2, y: 1, w: 2, h: 1, enc: Encoding.CopyRect, payload: copy }));
    expect(Array.from(fb.data.subarray((1 * 4 + 2) * 4, (1 * 4 + 3) * 4))).toEqual([10, 20, 30, 255]);
    // A refused layout leaves the size; an accepted one changes it.
    fb.update(update({ x: 1, y: DesktopSizeStatus.Prohibited, w: 8, h: 8, enc: Encoding.ExtendedDesktopSize, payload: screens(8, 8) }));
    expect([fb.width, fb.height]).toEqual([4, 2]);
    fb.update(update({ x: 0, y: DesktopSizeStatus.Ok, w: 6, h: 3, enc: Encoding.ExtendedDesktopSize, payload: screens(6, 3) }));
    expect([fb.width, fb.height]).toEqual([6, 3]);
    fb.update(update({ x: 0, y: 0, w: 5, h: 5, enc: Encoding.DesktopSize }));
    expect([fb.width, fb.height]).toEqual([5, 5]);
  });

  it('refuses a cut-short update, an unknown encoding and a keyframe of the wrong size', () => {
    const fb = new ReplayFramebuffer();
    fb.keyframe(4, 2, new Uint8Array(32));
    const whole = update({ x: 0, y: 0, w: 2, h: 1, enc: Encoding.Raw, payload: bgrx(2, [1, 2, 3]) });
    expect(() => fb.update(whole.subarray(0, whole.length - 1))).toThrow(/cut short/);
    expect(() => fb.update(update({ x: 0, y: 0, w: 1, h: 1, enc: 7 }))).toThrow(/unsupported RFB encoding 7/);
    expect(() => fb.keyframe(4, 2, new Uint8Array(31))).toThrow(/holds 31 bytes/);
  });
});
