import { describe, expect, it } from 'vitest';
import { ByteReader } from './byte-reader.js';
import { readExtendedDesktopSize, readRectHeader, readServerMessage } from './server-messages.js';

function readerOf(bytes: Buffer): ByteReader {
  const r = new ByteReader();
  r.push(bytes);
  return r;
}

/** Every proper prefix is "not yet" and consumes nothing; the whole message is consumed exactly. */
function readsOnlyWhenComplete<T>(bytes: Buffer, read: (r: ByteReader) => T | undefined): T {
  for (let k = 0; k < bytes.length; k++) {
    const r = readerOf(bytes.subarray(0, k));
    expect(read(r), `prefix of ${k} bytes`).toBeUndefined();
    expect(r.consumed).toBe(0);
  }
  const r = readerOf(Buffer.concat([bytes, Buffer.from([0xee])])); // a byte of the next message stays
  const result = read(r)!;
  expect(r.available).toBe(1);
  return result;
}

describe('server messages', () => {
  it('reads a FramebufferUpdate header', () => {
    expect(readsOnlyWhenComplete(Buffer.from([0, 0, 0x01, 0x02]), readServerMessage)).toEqual({ kind: 'framebuffer-update', rects: 258 });
  });

  it('turns colour map entries into bytes to discard', () => {
    expect(readsOnlyWhenComplete(Buffer.from([1, 0, 0, 0, 0, 3]), readServerMessage)).toEqual({ kind: 'discard', bytes: 18 });
  });

  it('reads bell and end-of-continuous-updates', () => {
    expect(readsOnlyWhenComplete(Buffer.from([2]), readServerMessage)).toEqual({ kind: 'bell' });
    expect(readsOnlyWhenComplete(Buffer.from([150]), readServerMessage)).toEqual({ kind: 'end-of-continuous-updates' });
  });

  it('reads cut text as latin-1; Extended Clipboard (negative length) and huge text become discards at the header', () => {
    const text = Buffer.from('héllo', 'latin1');
    expect(readsOnlyWhenComplete(Buffer.concat([Buffer.from([3, 0, 0, 0, 0, 0, 0, text.length]), text]), readServerMessage)).toEqual({
      kind: 'cut-text',
      text: 'héllo',
    });
    expect(readsOnlyWhenComplete(Buffer.from([3, 0, 0, 0, 0xff, 0xff, 0xff, 0xfb]), readServerMessage)).toEqual({
      kind: 'discard',
      bytes: 5,
    });
    expect(readsOnlyWhenComplete(Buffer.from([3, 0, 0, 0, 0x10, 0, 0, 0]), readServerMessage)).toEqual({
      kind: 'discard',
      bytes: 0x10000000,
    });
  });

  it('reads a fence with its flags and payload', () => {
    const m = readsOnlyWhenComplete(Buffer.from([248, 0, 0, 0, 0x80, 0, 0, 3, 2, 9, 8]), readServerMessage);
    expect(m).toEqual({ kind: 'fence', flags: 0x80000003, payload: Buffer.from([9, 8]) });
  });

  it('fails clearly on an unknown message type', () => {
    expect(() => readServerMessage(readerOf(Buffer.from([99])))).toThrow('unknown RFB server message type 99');
  });

  it('reads a rect header with a signed encoding', () => {
    expect(readsOnlyWhenComplete(Buffer.from([0, 1, 0, 2, 0, 3, 0, 4, 0xff, 0xff, 0xfe, 0xcc]), readRectHeader)).toEqual({
      x: 1,
      y: 2,
      width: 3,
      height: 4,
      encoding: -308,
    });
  });

  it('reads ExtendedDesktopSize screens and keeps the first screen id and flags', () => {
    const screens = Buffer.alloc(4 + 32);
    screens[0] = 2;
    screens.writeUInt32BE(0xabc, 4);
    screens.writeUInt32BE(7, 16);
    screens.writeUInt32BE(0xdef, 20);
    expect(readsOnlyWhenComplete(screens, readExtendedDesktopSize)).toEqual({ screen: { id: 0xabc, flags: 7 } });
    expect(readsOnlyWhenComplete(Buffer.alloc(4), readExtendedDesktopSize)).toEqual({ screen: undefined });
  });
});
