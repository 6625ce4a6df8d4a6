import { describe, expect, it } from 'vitest';
import { streamText } from './stream-text.js';

describe('streamText', () => {
  it('keeps valid UTF-8 as text, a leading BOM included', () => {
    expect(streamText(Buffer.from('\ufeffhé 😀\n'), false)).toEqual({ text: '\ufeffhé 😀\n', encoding: 'utf8' });
    expect(streamText(Buffer.alloc(0), false)).toEqual({ text: '', encoding: 'utf8' });
  });

  it('gives bytes that are not UTF-8 as base64 of exactly those bytes (issue 35: they became U+FFFD)', () => {
    const bytes = Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x41, 0xc3]);
    const r = streamText(bytes, false);
    expect(r.encoding).toBe('base64');
    expect(Buffer.from(r.text, 'base64')).toEqual(bytes);
  });

  it('a character cut by the output limit leaves text as text; the same cut without truncation is not UTF-8', () => {
    const cut = Buffer.from('abc😀').subarray(0, 5);
    expect(streamText(cut, true)).toEqual({ text: 'abc', encoding: 'utf8' });
    expect(streamText(cut, false).encoding).toBe('base64');
    // Invalid bytes before the cut are still invalid.
    expect(streamText(Buffer.from([0xff, 0x41]), true).encoding).toBe('base64');
  });
});
