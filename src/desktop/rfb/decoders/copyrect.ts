import type { ByteReader } from '../byte-reader.js';
import type { Framebuffer } from '../framebuffer.js';
import type { Decoder, Rect } from './decoder.js';

/** CopyRect: u16 srcX, u16 srcY; the rect's pixels are copied from there within the framebuffer. */
export class CopyRectDecoder implements Decoder {
  decodeRect(reader: ByteReader, rect: Rect, fb: Framebuffer): boolean {
    if (!reader.has(4)) return false;
    const srcX = reader.readU16();
    const srcY = reader.readU16();
    fb.checkBounds('CopyRect source', { x: srcX, y: srcY, width: rect.width, height: rect.height });
    fb.checkBounds('CopyRect', rect);
    fb.copyRect(srcX, srcY, rect);
    return true;
  }
}
