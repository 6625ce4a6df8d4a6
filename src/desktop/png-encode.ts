import { deflate, deflateSync } from 'node:zlib';
import { promisify } from 'node:util';

/** PNG encoding of an RGBA framebuffer, using only node:zlib. Screenshots are the only user, so no filtering
 * heuristics: every scanline uses filter 0 (None); desktop content deflates well enough without them. */

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

// CRC-32 (ISO 3309, reflected polynomial 0xEDB88320) as PNG requires. zlib.crc32 only exists in newer Node
// releases, so the classic byte table is built once here.
const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(data: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < data.length; i++) c = CRC_TABLE[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** One chunk: length, type, data, and a CRC over type + data. */
function chunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

const deflateAsync = promisify(deflate);

/** Encodes width*height RGBA pixels (row-major, 4 bytes each) as an 8-bit RGBA PNG (colour type 6). */
export function encodePng(width: number, height: number, rgba: Uint8Array): Buffer {
  const { header, raw } = scanlines(width, height, rgba);
  return Buffer.concat([header, chunk('IDAT', deflateSync(raw)), IEND]);
}

/**
 * The same PNG, deflated on libuv's thread pool at a fast level (1): a 1280x800 screenshot costs the
 * event loop only the scanline copy, so the live connection keeps reading updates meanwhile.
 */
export async function encodePngAsync(width: number, height: number, rgba: Uint8Array, level = 1): Promise<Buffer> {
  const { header, raw } = scanlines(width, height, rgba);
  return Buffer.concat([header, chunk('IDAT', await deflateAsync(raw, { level })), IEND]);
}

const IEND = chunk('IEND', Buffer.alloc(0));

function scanlines(width: number, height: number, rgba: Uint8Array): { header: Buffer; raw: Buffer } {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width > 0x7fffffff || height > 0x7fffffff) {
    throw new RangeError(`invalid PNG size ${width}x${height}`);
  }
  const stride = width * 4;
  if (rgba.length !== stride * height) {
    throw new RangeError(`RGBA buffer has ${rgba.length} bytes, expected ${stride * height} for ${width}x${height}`);
  }

  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // colour type: RGBA
  ihdr[10] = 0; // compression: deflate
  ihdr[11] = 0; // filter method 0
  ihdr[12] = 0; // no interlace

  // Each scanline is prefixed by its filter type byte (0 = None).
  const raw = Buffer.alloc((stride + 1) * height);
  for (let y = 0; y < height; y++) raw.set(rgba.subarray(y * stride, (y + 1) * stride), y * (stride + 1) + 1);

  return { header: Buffer.concat([SIGNATURE, chunk('IHDR', ihdr)]), raw };
}

/** Reads width and height from a PNG's IHDR chunk (which must come first). */
export function decodePngSize(png: Buffer): { width: number; height: number } {
  if (png.length < 24 || !png.subarray(0, 8).equals(SIGNATURE) || png.toString('latin1', 12, 16) !== 'IHDR') {
    throw new Error('not a PNG (bad signature or missing IHDR)');
  }
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}
