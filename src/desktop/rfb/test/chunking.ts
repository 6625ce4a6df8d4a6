import { seededRandom } from '../../../shared/test/seeded-random.js';

/**
 * Ways to cut a byte stream into chunks, so parsers can be shown to give the same result however the
 * bytes arrive. Every result concatenates back to the input.
 */

/** The two-chunk splits at every inner boundary: [0,k) [k,n) for k = 1 … n-1. */
export function* everySplit(bytes: Buffer): Generator<Buffer[]> {
  for (let k = 1; k < bytes.length; k++) yield [bytes.subarray(0, k), bytes.subarray(k)];
}

/** One byte per chunk. */
export function byteByByte(bytes: Buffer): Buffer[] {
  return Array.from({ length: bytes.length }, (_, i) => bytes.subarray(i, i + 1));
}

/** Random cuts from a seeded PRNG (chunks of 1 … maxChunk bytes), reproducible from the seed. */
export function randomSplit(bytes: Buffer, seed: number, maxChunk = 7): Buffer[] {
  const random = seededRandom(seed);
  const chunks: Buffer[] = [];
  for (let at = 0; at < bytes.length;) {
    const n = Math.min(bytes.length - at, 1 + Math.floor(random() * maxChunk));
    chunks.push(bytes.subarray(at, at + n));
    at += n;
  }
  return chunks;
}
