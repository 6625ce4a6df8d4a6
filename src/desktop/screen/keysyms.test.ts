import { describe, expect, it } from 'vitest';
import { keysymsForText, MAX_TYPE_CHARS, parseKeys } from './keysyms.js';

describe('keysymsForText', () => {
  it('gives Latin-1 its own keysyms and everything else the Unicode keysym, per code point', () => {
    expect(keysymsForText('aZ é')).toEqual([0x61, 0x5a, 0x20, 0xe9]);
    expect(keysymsForText('€😀')).toEqual([0x010020ac, 0x0101f600]);
    expect(keysymsForText('a\nb\t')).toEqual([0x61, 0xff0d, 0x62, 0xff09]);
  });

  it('refuses empty text, control characters and text above the limit', () => {
    expect(() => keysymsForText('')).toThrow(/empty/);
    expect(() => keysymsForText('a\u0001')).toThrow(/control character U\+0001/);
    expect(() => keysymsForText('x'.repeat(1024 * 1024))).toThrow(new RegExp(`1048576 characters, above the limit of ${MAX_TYPE_CHARS}`));
  });
});

describe('parseKeys', () => {
  it('reads combinations and aliases', () => {
    expect(parseKeys('ctrl+l')).toEqual([[0xffe3, 0x6c]]);
    expect(parseKeys('ctrl+shift+t Return')).toEqual([[0xffe3, 0xffe1, 0x74], [0xff0d]]);
    expect(parseKeys('alt+F4 esc enter')).toEqual([[0xffe9, 0xffc1], [0xff1b], [0xff0d]]);
    expect(parseKeys('ctrl++')).toEqual([[0xffe3, 0x2b]]);
  });

  it('refuses what is not a key name, saying which part', () => {
    expect(() => parseKeys('ctrl+banana')).toThrow(/"banana" in keys "ctrl\+banana" is not a key name/);
    expect(() => parseKeys('ctrl+')).toThrow(/empty key name/);
    expect(() => parseKeys('  ')).toThrow(/keys is empty/);
  });
});
