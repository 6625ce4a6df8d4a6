import { ByteReader } from '../rfb/byte-reader.js';
import { createDecoders } from '../rfb/decoders/index.js';
import type { Decoder } from '../rfb/decoders/decoder.js';
import { Framebuffer } from '../rfb/framebuffer.js';
import { DesktopSizeStatus, Encoding } from '../rfb/protocol.js';
import { readExtendedDesktopSize, readRectHeader, readServerMessage } from '../rfb/server-messages.js';

/**
 * The screen as a recording replays it: a keyframe's pixels, then recorded FramebufferUpdate
 * messages applied by the same decoders the live connection uses (src/desktop/rfb/decoders), so the
 * replayed framebuffer is the live one, pixel for pixel. Size changes come as the DesktopSize and
 * ExtendedDesktopSize pseudo-rects inside the updates, handled as RfbClient handles them.
 */
export class ReplayFramebuffer {
  private fb = new Framebuffer(0, 0);
  private readonly decoders: ReadonlyMap<number, Decoder> = createDecoders();

  get width(): number {
    return this.fb.width;
  }

  get height(): number {
    return this.fb.height;
  }

  /** The pixels (RGBA, not a copy). */
  get data(): Uint8Array {
    return this.fb.data;
  }

  /** Starts over from a keyframe's pixels. */
  keyframe(width: number, height: number, rgba: Uint8Array): void {
    if (rgba.length !== width * height * 4)
      throw new Error(`keyframe of ${width}x${height} holds ${rgba.length} bytes, not ${width * height * 4}`);
    this.fb = new Framebuffer(width, height);
    this.fb.data.set(rgba);
  }

  /** Applies one whole FramebufferUpdate message (its wire bytes). Throws on one that is cut short or malformed. */
  update(message: Uint8Array): void {
    const r = new ByteReader();
    r.push(message);
    const m = readServerMessage(r);
    if (m?.kind !== 'framebuffer-update') throw new Error('a recorded update is not a FramebufferUpdate');
    for (let left = m.rects; left > 0; left--) {
      const rect = readRectHeader(r);
      if (!rect) throw new Error('a recorded FramebufferUpdate is cut short');
      if (rect.encoding === Encoding.LastRect) break;
      const decoder = this.decoders.get(rect.encoding);
      if (decoder) {
        if (!decoder.decodeRect(r, rect, this.fb)) throw new Error('a recorded rect is cut short');
      } else if (rect.encoding === Encoding.DesktopSize) {
        this.fb.resize(rect.width, rect.height);
      } else if (rect.encoding === Encoding.ExtendedDesktopSize) {
        if (!readExtendedDesktopSize(r)) throw new Error('a recorded ExtendedDesktopSize is cut short');
        // rect.y is the status: only an accepted layout changes the size (as RfbClient.decodeRect).
        if (rect.y === DesktopSizeStatus.Ok) this.fb.resize(rect.width, rect.height);
      } else {
        throw new Error(`unsupported RFB encoding ${rect.encoding} in a recorded update`);
      }
    }
  }
}
