import { describe, expect, it } from 'vitest';
import { decodeLogFrames, LogFrameDecoder } from './docker-log-frames.js';

function frame(stream: 1 | 2, text: string | Buffer): Buffer {
  const payload = typeof text === 'string' ? Buffer.from(text) : text;
  const h = Buffer.alloc(8);
  h[0] = stream;
  h.writeUInt32BE(payload.length, 4);
  return Buffer.concat([h, payload]);
}

describe('docker log frames', () => {
  it('joins stdout and stderr frames in order', () => {
    expect(decodeLogFrames(Buffer.concat([frame(1, 'out 1\n'), frame(2, 'err 1\n'), frame(1, 'out 2\n')]))).toBe('out 1\nerr 1\nout 2\n');
  });
  it('waits for a frame split across chunks, and a UTF-8 character split across frames', () => {
    const euro = Buffer.from('€');
    const all = Buffer.concat([frame(1, euro.subarray(0, 2)), frame(1, Buffer.concat([euro.subarray(2), Buffer.from('\n')]))]);
    const d = new LogFrameDecoder();
    let text = '';
    for (let i = 0; i < all.length; i += 3) text += d.push(all.subarray(i, i + 3));
    expect(text).toBe('€\n');
  });
});
