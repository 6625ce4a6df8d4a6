import { describe, expect, it } from 'vitest';
import { API_BODY_MAX_BYTES, BodyTooLarge, callBodyLimit, readBodyText, readJsonObject } from './body-reader.js';

async function* chunks(...parts: Buffer[]): AsyncGenerator<Buffer> {
  for (const p of parts) yield p;
}

describe('request bodies', () => {
  it('a UTF-8 character split across chunks arrives whole', async () => {
    const bytes = Buffer.from(JSON.stringify({ command: 'echo é€😀' }));
    const at = bytes.indexOf(Buffer.from('€')) + 1; // inside the 3-byte euro sign
    const body = await readJsonObject(chunks(bytes.subarray(0, at), bytes.subarray(at)));
    expect(body).toEqual({ command: 'echo é€😀' });
  });

  it('the limit counts bytes, not UTF-16 units', async () => {
    // 30 000 euro signs: 30 000 UTF-16 units, 90 000 bytes — above a 64 KiB limit.
    const big = Buffer.from('€'.repeat(30_000));
    await expect(readBodyText(chunks(big.subarray(0, 40_000), big.subarray(40_000)), 64 * 1024)).rejects.toBeInstanceOf(BodyTooLarge);
    await expect(readBodyText(chunks(Buffer.from('a'.repeat(64 * 1024))), 64 * 1024)).resolves.toHaveLength(64 * 1024);
  });

  it('a declared Content-Length above the limit is refused before reading', async () => {
    const req = Object.assign(chunks(), { headers: { 'content-length': '999999' } });
    await expect(readBodyText(req, 1000)).rejects.toThrow(/larger than 1000 bytes/);
  });

  it('invalid UTF-8 and non-object JSON are refused with what was wrong', async () => {
    await expect(readBodyText(chunks(Buffer.from([0x7b, 0xe0, 0x7d])), 100)).rejects.toThrow(/not valid UTF-8/);
    await expect(readJsonObject(chunks(Buffer.from('[1]')))).rejects.toThrow(/JSON object/);
    await expect(readJsonObject(chunks(Buffer.from('{')))).rejects.toThrow(/not JSON/);
    await expect(readJsonObject(chunks())).resolves.toEqual({});
  });

  it('desktopClipboard’s body holds clipboard.maxBytes of text however JSON spells it; other calls stay at 64 KiB (issue 35)', async () => {
    const clipboardMaxBytes = 100_000;
    const limit = callBodyLimit('desktopClipboard', { clipboardMaxBytes });
    // The worst spelling: every byte a control character, six bytes of JSON each.
    const text = '\u0001'.repeat(clipboardMaxBytes);
    const body = Buffer.from(JSON.stringify({ sandbox: 'sb', text }));
    expect(body.length).toBeGreaterThan(6 * clipboardMaxBytes);
    await expect(readJsonObject(chunks(body), limit)).resolves.toEqual({ sandbox: 'sb', text });
    expect(callBodyLimit('exec', { clipboardMaxBytes })).toBe(API_BODY_MAX_BYTES);
    await expect(readJsonObject(chunks(body), callBodyLimit('exec', { clipboardMaxBytes }))).rejects.toBeInstanceOf(BodyTooLarge);
  });
});
