import { describe, expect, it } from 'vitest';
import { appendBounded, findMatches, segments, stepMatch } from './log-buffer.js';

describe('log buffer', () => {
  it('keeps the newest text within the bound, cut at a line', () => {
    expect(appendBounded('a\n', 'b\n', 10)).toEqual({ text: 'a\nb\n', dropped: false });
    expect(appendBounded('line1\nline2\n', 'line3\n', 12)).toEqual({ text: 'line3\n', dropped: true });
  });
  it('finds every match case-insensitively and cuts the text around them', () => {
    const m = findMatches('Error one\nerror two\n', 'error');
    expect(m).toEqual([
      { start: 0, end: 5 },
      { start: 10, end: 15 },
    ]);
    expect(segments('Error one\nerror two\n', m).map((s) => [s.text, s.match])).toEqual([
      ['Error', 0],
      [' one\n', null],
      ['error', 1],
      [' two\n', null],
    ]);
    expect(findMatches('abc', '')).toEqual([]);
  });
  it('steps through matches, wrapping', () => {
    expect(stepMatch(-1, 3, 1)).toBe(0);
    expect(stepMatch(-1, 3, -1)).toBe(2);
    expect(stepMatch(2, 3, 1)).toBe(0);
    expect(stepMatch(0, 3, -1)).toBe(2);
    expect(stepMatch(0, 0, 1)).toBe(-1);
  });
});
