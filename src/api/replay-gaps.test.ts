import { describe, expect, it } from 'vitest';
import { describeGap } from './replay-gaps.js';

const T0 = Date.parse('2026-12-05T06:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
const gap = { from: T0 + 10_000, to: T0 + 40_000 };

describe('describeGap', () => {
  it("names the sandbox's operation inside the gap: a restore before a desktop start; none reads as not recorded", () => {
    expect(describeGap(gap, [])).toBe('not recorded (the desktop was stopped or not recorded)');
    expect(describeGap(gap, [{ kind: 'desktop-start', startedAt: at(35) }])).toBe('desktop not running (stopped, then started again)');
    // A restore begins a little before the screen's last record (the row is written as it starts).
    expect(
      describeGap(gap, [
        { kind: 'desktop-start', startedAt: at(38) },
        { kind: 'restore', startedAt: at(8) },
      ]),
    ).toBe('sandbox restored from a checkpoint (the desktop restarted)');
    // Operations outside the gap say nothing about it.
    expect(
      describeGap(gap, [
        { kind: 'restore', startedAt: at(60) },
        { kind: 'desktop-start', startedAt: at(0) },
      ]),
    ).toBe('not recorded (the desktop was stopped or not recorded)');
  });
});
