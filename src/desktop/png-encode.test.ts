import { describe, it, expect } from 'vitest';
import { inflateSync } from 'node:zlib';
import { decodePngSize, encodePng, encodePngAsync } from './png-encode.js';

interface Chunk {
  type: string;
  data: Buffer;
  crc: number;
  /** The bytes the CRC covers: type + data. */
  covered: Buffer;
}

function chunks(png: Buffer): Chunk[] {
  const out: Chunk[] = [];
  for (let at = 8; at < png.length;) {
    const len = png.readUInt32BE(at);
    out.push({
      type: png.toString('latin1', at + 4, at + 8),
      data: png.subarray(at + 8, at + 8 + len),
      crc: png.readUInt32BE(at + 8 + len),
      covered: png.subarray(at + 4, at + 8 + len),
    });
    at += 12 + len;
  }
  return out;
}

/** Bit-at-a-time CRC-32, deliberately written differently from the table version under test. */
function slowCrc32(data: Uint8Array): number {
  let crc = ~0;
  for (const byte of data) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return ~crc >>> 0;
}

function gradient(width: number, height: number): Uint8Array {
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0; i < width * height; i++) rgba.set([i & 0xff, (i * 7) & 0xff, (i * 13) & 0xff, 255 - (i & 0x7f)], i * 4);
  return rgba;
}

describe('encodePng', () => {
  it('writes the signature, an 8-bit RGBA IHDR, IDAT and IEND in that order', () => {
    const png = encodePng(5, 3, gradient(5, 3));
    expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    const cs = chunks(png);
    expect(cs.map((c) => c.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
    const ihdr = cs[0]!.data;
    expect(ihdr.length).toBe(13);
    expect(ihdr.readUInt32BE(0)).toBe(5);
    expect(ihdr.readUInt32BE(4)).toBe(3);
    expect([...ihdr.subarray(8)]).toEqual([8, 6, 0, 0, 0]);
    expect(cs[2]!.data.length).toBe(0);
  });

  it('gives every chunk a correct CRC-32 over type and data', () => {
    const png = encodePng(17, 9, gradient(17, 9));
    for (const c of chunks(png)) expect(c.crc, c.type).toBe(slowCrc32(c.covered));
    // The IEND CRC is a well-known constant, which also pins the CRC variant.
    expect(png.subarray(-4).toString('hex')).toBe('ae426082');
  });

  it('round-trips pixels: IDAT inflates to filter-0 scanlines holding the input rows', () => {
    const width = 31;
    const height = 7;
    const rgba = gradient(width, height);
    const raw = inflateSync(chunks(encodePng(width, height, rgba)).find((c) => c.type === 'IDAT')!.data);
    expect(raw.length).toBe(height * (1 + width * 4));
    for (let y = 0; y < height; y++) {
      const line = raw.subarray(y * (1 + width * 4), (y + 1) * (1 + width * 4));
      expect(line[0]).toBe(0);
      expect(Buffer.from(line.subarray(1)).equals(Buffer.from(rgba.subarray(y * width * 4, (y + 1) * width * 4)))).toBe(true);
    }
  });

  it('rejects a buffer whose length does not match the size, and empty sizes', () => {
    expect(() => encodePng(2, 2, new Uint8Array(15))).toThrow(/expected 16/);
    expect(() => encodePng(0, 2, new Uint8Array(0))).toThrow(RangeError);
  });
});

describe('decodePngSize', () => {
  it('reads the size from IHDR', () => {
    expect(decodePngSize(encodePng(640, 2, new Uint8Array(640 * 2 * 4)))).toEqual({ width: 640, height: 2 });
  });

  it('rejects data that is not a PNG', () => {
    expect(() => decodePngSize(Buffer.from('GIF89a, certainly not a PNG file'))).toThrow(/not a PNG/);
  });
});

describe('encodePngAsync', () => {
  it('holds the same scanlines as the synchronous encoder (deflated off the event loop)', async () => {
    const { inflateSync } = await import('node:zlib');
    const rgba = new Uint8Array(7 * 5 * 4).map((_, i) => (i * 37) & 0xff);
    const idat = (png: Buffer): Buffer => inflateSync(png.subarray(41, png.length - 12 - 4));
    const a = await encodePngAsync(7, 5, rgba);
    const b = encodePng(7, 5, rgba);
    expect(decodePngSize(a)).toEqual({ width: 7, height: 5 });
    expect(idat(a).equals(idat(b))).toBe(true);
  });
});
