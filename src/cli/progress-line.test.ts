import { describe, expect, it } from 'vitest';
import { progressLine } from './progress-line.js';

describe('progressLine', () => {
  it('on a terminal: one line updated in place (\\r, erase to end), ended by a newline once', () => {
    let out = '';
    const p = progressLine((s) => (out += s), true);
    p.update('sandbox-desk: 5% screen 1 of 60 s');
    p.update('sandbox-desk: 5% screen 1 of 60 s');
    p.update('sandbox-desk: 50% screen 30 of 60 s');
    p.done();
    p.done();
    expect(out).toBe('\rsandbox-desk: 5% screen 1 of 60 s\x1b[K\rsandbox-desk: 50% screen 30 of 60 s\x1b[K\n');
    expect(out.split('\n')).toHaveLength(2);
  });

  it('into a file or a pipe: a line per change, no \\r or escapes', () => {
    let out = '';
    const p = progressLine((s) => (out += s), false);
    p.update('a');
    p.update('a');
    p.update('b');
    p.done();
    expect(out).toBe('a\nb\n');
  });
});
