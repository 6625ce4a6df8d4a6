import { SandboxDeskError } from '../../shared/errors.js';
import { encodePngAsync } from '../png-encode.js';

/** Image formats a frame can be encoded in. */
export type FrameFormat = 'png' | 'jpeg' | 'webp';
export const FRAME_FORMATS: readonly FrameFormat[] = ['png', 'jpeg', 'webp'];
export const MIME: Record<FrameFormat, string> = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' };
const DEFAULT_QUALITY = 80;

type Sharp = (typeof import('sharp'))['default'];
let sharpLoad: Promise<Sharp | Error> | undefined;

/**
 * sharp (libvips) encodes JPEG and WebP on its own threads. Loaded on first use, so the core starts
 * without it (a platform with no prebuilt binary), and JPEG/WebP are then refused saying why.
 */
function loadSharp(): Promise<Sharp | Error> {
  sharpLoad ??= import('sharp').then(
    (m) => m.default,
    (err: unknown) => (err instanceof Error ? err : new Error(String(err))),
  );
  return sharpLoad;
}

/**
 * Encodes RGBA pixels off the event loop: PNG with zlib's async deflate at level 1 (node:zlib,
 * always there), JPEG and WebP with sharp.
 */
export async function encodeFrame(rgba: Uint8Array, width: number, height: number, format: FrameFormat, quality?: number): Promise<Buffer> {
  if (quality !== undefined && (!Number.isInteger(quality) || quality < 1 || quality > 100)) {
    throw new SandboxDeskError('invalid_input', `quality must be a whole number 1–100, got ${quality}`);
  }
  switch (format) {
    case 'png':
      return encodePngAsync(width, height, rgba);
    case 'jpeg':
    case 'webp': {
      const sharp = await loadSharp();
      if (sharp instanceof Error) {
        throw new SandboxDeskError(
          'backend_unavailable',
          `cannot encode ${format}: the sharp library did not load (${sharp.message.split('\n')[0]})`,
          { hint: 'ask for format png, or install sharp (npm install)' },
        );
      }
      const image = sharp(Buffer.from(rgba.buffer, rgba.byteOffset, rgba.byteLength), { raw: { width, height, channels: 4 } });
      const q = quality ?? DEFAULT_QUALITY;
      return format === 'jpeg' ? image.jpeg({ quality: q }).toBuffer() : image.webp({ quality: q }).toBuffer();
    }
    default:
      throw new SandboxDeskError('invalid_input', `format must be one of ${FRAME_FORMATS.join(', ')}, got ${JSON.stringify(format)}`);
  }
}
