import { describe, expect, it } from 'vitest';
import { coveredMs } from './recording-coverage.js';

describe('recording-coverage: what the records vouch for', () => {
  it('counts steps of at most two ticks inside a segment, clipped to the minute; a longer silence and the stretch between segments are not covered', () => {
    // Segment 1: records at 0, 2, 4 s, then 10 s (a 6 s silence); segment 2 from 12 s, every 2 s to 20 s.
    const segs = [
      [0, 2000, 4000, 10_000],
      [12_000, 14_000, 16_000, 18_000, 20_000],
    ];
    expect(coveredMs(segs, 0, 20_000)).toBe(4000 + 8000);
    // Clipped: only 1–4 s of segment 1 and 12–15 s of segment 2 fall in [1 s, 15 s].
    expect(coveredMs(segs, 1000, 15_000)).toBe(3000 + 3000);
    expect(coveredMs([], 0, 60_000)).toBe(0);
  });
});
