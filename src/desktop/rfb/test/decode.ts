import { ByteReader } from '../byte-reader.js';
import type { Decoder, Rect } from '../decoders/decoder.js';
import type { Framebuffer } from '../framebuffer.js';

/**
 * Feeds a rect's payload to a decoder chunk by chunk, calling decodeRect after each chunk the way the
 * client does, and returns what each call answered plus what is left queued. A correct decoder answers
 * false for every chunk but the last and leaves nothing behind.
 */
export function decodeInChunks(decoder: Decoder, rect: Rect, fb: Framebuffer, chunks: Buffer[]): { answers: boolean[]; left: number } {
  const reader = new ByteReader();
  const answers: boolean[] = [];
  for (const chunk of chunks) {
    reader.push(chunk);
    answers.push(decoder.decodeRect(reader, rect, fb));
  }
  return { answers, left: reader.available };
}

/** What decodeInChunks answers for a decoder that behaves: false … false, true. */
export function wellBehaved(chunkCount: number): { answers: boolean[]; left: number } {
  return { answers: [...Array<boolean>(chunkCount - 1).fill(false), true], left: 0 };
}
