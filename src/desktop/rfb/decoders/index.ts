import { Encoding } from '../protocol.js';
import { CopyRectDecoder } from './copyrect.js';
import type { Decoder } from './decoder.js';
import { HextileDecoder } from './hextile.js';
import { RawDecoder } from './raw.js';

/**
 * One set of decoders per connection or replay (each keeps state between the calls for one rect):
 * the live client and a recording's replay decode with the same table, so a replayed frame is the
 * live one pixel for pixel.
 */
export function createDecoders(): ReadonlyMap<number, Decoder> {
  return new Map<number, Decoder>([
    [Encoding.Raw, new RawDecoder()],
    [Encoding.CopyRect, new CopyRectDecoder()],
    [Encoding.Hextile, new HextileDecoder()],
  ]);
}
