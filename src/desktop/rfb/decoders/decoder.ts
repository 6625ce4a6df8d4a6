import type { ByteReader } from '../byte-reader.js';
import type { Framebuffer, RectArea } from '../framebuffer.js';

/** A rect of a FramebufferUpdate, as its header announced it. */
export interface Rect extends RectArea {
  encoding: number;
}

/**
 * One encoding's decoder (noVNC's `core/decoders/*.js` contract). `decodeRect` consumes what it can of
 * the rect's payload and returns true once the rect is complete, false while bytes are still missing; the
 * client calls it again with the same rect when more arrive. A decoder keeps whatever it needs between
 * those calls and is ready for the next rect once it has returned true. It throws on a rect that cannot
 * be valid (e.g. outside the framebuffer).
 */
export interface Decoder {
  decodeRect(reader: ByteReader, rect: Rect, fb: Framebuffer): boolean;
}
