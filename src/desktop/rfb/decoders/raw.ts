import type { ByteReader } from '../byte-reader.js';
import type { Framebuffer } from '../framebuffer.js';
import type { Decoder, Rect } from './decoder.js';

/** Bytes per pixel in the format the client asks for (32 bpp BGRX). */
const BYTES_PER_PIXEL = 4;
/** Rows are taken in batches of about this many bytes, so a big read never has to assemble a whole screen. */
const BATCH_BYTES = 64 * 1024;

/**
 * Raw: width*height pixels, row by row. Whole rows are applied as soon as they are there, so a
 * full-screen rect never has to sit in the incoming queue whole.
 */
export class RawDecoder implements Decoder {
  /** Rows of the current rect still to come; 0 between rects. */
  private rowsLeft = 0;

  decodeRect(reader: ByteReader, rect: Rect, fb: Framebuffer): boolean {
    if (this.rowsLeft === 0) {
      fb.checkBounds('Raw', rect);
      if (rect.width === 0 || rect.height === 0) return true;
      this.rowsLeft = rect.height;
    }
    const rowBytes = rect.width * BYTES_PER_PIXEL;
    const batch = Math.max(1, Math.floor(BATCH_BYTES / rowBytes));
    while (this.rowsLeft > 0) {
      const rows = Math.min(this.rowsLeft, batch, Math.floor(reader.available / rowBytes));
      if (rows === 0) return false;
      const data = reader.readBytes(rows * rowBytes);
      fb.putBgrxRows(rect.x, rect.y + rect.height - this.rowsLeft, rect.width, rows, data);
      this.rowsLeft -= rows;
    }
    return true;
  }
}
