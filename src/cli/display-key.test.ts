import { describe, expect, it } from 'vitest';
import { displayKey } from './display-key.js';

describe('displayKey', () => {
  it.each(['default', 'a', 'agent-1', 'build/step.2', 'user@host', 'café', 'x_y:z'])('shows %s bare', (k) => {
    expect(displayKey(k)).toBe(k);
  });
  it.each([
    ['', '""'],
    ['two words', '"two words"'],
    ['say "hi"', '"say \\"hi\\""'],
    ['tab\there', '"tab\\there"'],
    ['line\nbreak', '"line\\nbreak"'],
    ['-', '"-"'],
    ["it's", '"it\'s"'],
  ])('quotes %j as %s', (k, shown) => {
    expect(displayKey(k)).toBe(shown);
  });
});
