import { describe, expect, it } from 'vitest';
import { keysymsForText, MAX_TYPE_CHARS, planKeys } from './keysyms.js';

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

describe('planKeys', () => {
  it('reads combinations and aliases, for RFB', () => {
    const rfb = (combos: number[][]) => ({ via: 'rfb', combos });
    expect(planKeys('ctrl+l')).toEqual(rfb([[0xffe3, 0x6c]]));
    expect(planKeys('ctrl+shift+t Return')).toEqual(rfb([[0xffe3, 0xffe1, 0x74], [0xff0d]]));
    expect(planKeys('alt+F4 esc enter')).toEqual(rfb([[0xffe9, 0xffc1], [0xff1b], [0xff0d]]));
    expect(planKeys('ctrl++')).toEqual(rfb([[0xffe3, 0x2b]]));
  });

  it('sends a whole sequence with a name outside the table through xdotool, table keys as their keysyms', () => {
    expect(planKeys('ctrl+XF86AudioMute Return')).toEqual({
      via: 'xdotool',
      combos: ['0xffe3+XF86AudioMute', '0xff0d'],
      outside: ['XF86AudioMute'],
    });
  });

  it('refuses what is not even shaped like a key name, saying which part', () => {
    expect(() => planKeys('ctrl+ba-nana')).toThrow(/"ba-nana" in keys "ctrl\+ba-nana" is not a key name/);
    expect(() => planKeys('ctrl+')).toThrow(/empty key name/);
    expect(() => planKeys('  ')).toThrow(/keys is empty/);
  });
});
