import { describe, expect, it } from 'vitest';
import { median, metric, percentile, ratioFor } from './harness.js';

describe('bench harness', () => {
  it('takes nearest-rank percentiles of sorted samples', () => {
    const s = Array.from({ length: 100 }, (_, i) => i + 1); // 1..100
    expect(percentile(s, 50)).toBe(50);
    expect(percentile(s, 95)).toBe(95);
    expect(percentile(s, 100)).toBe(100);
    expect(percentile(s, 0)).toBe(1);
    expect(percentile([7], 95)).toBe(7);
    expect(() => percentile([], 50)).toThrow();
  });

  it('takes the median of odd and even counts', () => {
    expect(median([1, 2, 9])).toBe(2);
    expect(median([1, 2, 4, 9])).toBe(3);
  });

  it('reports the ratio as "times better" in the unit\'s direction', () => {
    expect(ratioFor('ms', 2, 60)).toBe(30); // lower is better: baseline / value
    expect(ratioFor('fps', 60, 30)).toBe(2); // higher is better: value / baseline
    expect(ratioFor('ms', 2, null)).toBeNull();
    expect(metric('x', 'ms', 10, 5).ratio).toBe(0.5); // slower than the baseline: below 1
  });
});
