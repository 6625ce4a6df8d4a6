import { SandboxDeskError } from '../../shared/errors.js';
import { encodePngAsync } from '../png-encode.js';

/** Image formats a frame can be encoded in. */
export type FrameFormat = 'png' | 'jpeg' | 'webp';
export const FRAME_FORMATS: readonly FrameFormat[] = ['png', 'jpeg', 'webp'];
export const MIME: Record<FrameFormat, string> = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' };

/**
 * Encodes RGBA pixels: PNG at a fast deflate level on the thread pool. JPEG and WebP need an encoder
 * library that is not installed in this build; they are refused with the formats that work.
 */
export async function encodeFrame(rgba: Uint8Array, width: number, height: number, format: FrameFormat, quality?: number): Promise<Buffer> {
  if (quality !== undefined && (!Number.isInteger(quality) || quality < 1 || quality > 100)) {
    throw new SandboxDeskError('invalid_input', `quality must be a whole number 1–100, got ${quality}`);
  }
  switch (format) {
    case 'png':
      return encodePngAsync(width, height, rgba);
    case 'jpeg':
    case 'webp':
      throw new SandboxDeskError('invalid_input', `format ${format} is not available in this build (no ${format} encoder installed); png is`, { hint: 'ask for format png' });
    default:
      throw new SandboxDeskError('invalid_input', `format must be one of ${FRAME_FORMATS.join(', ')}, got ${JSON.stringify(format)}`);
  }
}
