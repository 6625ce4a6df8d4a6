import { describe, expect, it } from 'vitest';
import { parseDurationArg } from './time-arg.js';

describe('parseDurationArg', () => {
  it('takes a number with a unit, or bare seconds (as exec --timeout)', () => {
    expect(parseDurationArg('500ms', '--timeout', 600_000)).toBe(500);
    expect(parseDurationArg('20s', '--timeout', 600_000)).toBe(20_000);
    expect(parseDurationArg('2m', '--timeout', 600_000)).toBe(120_000);
    expect(parseDurationArg('1.5m', '--timeout', 600_000)).toBe(90_000);
    expect(parseDurationArg('45', '--timeout', 600_000)).toBe(45_000);
    expect(parseDurationArg('0', '--timeout', 600_000)).toBe(0);
  });

  it('refuses what is not a duration, and one over the limit, saying what it takes', () => {
    expect(() => parseDurationArg('soon', '--timeout', 600_000)).toThrow(/--timeout "soon" is not a duration/);
    expect(() => parseDurationArg('-5s', 'timeout', 600_000)).toThrow(/not a duration/);
    expect(() => parseDurationArg('1h', 'timeout', 600_000)).toThrow(/longer than the most allowed, 10m/);
  });
});
