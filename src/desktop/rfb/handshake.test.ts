import { describe, expect, it } from 'vitest';
import { ByteReader } from './byte-reader.js';
import { readProtocolVersion, readSecurityResult, readSecurityType33, readSecurityTypes, readServerInit } from './handshake.js';

function readerOf(bytes: Buffer): ByteReader {
  const r = new ByteReader();
  r.push(bytes);
  return r;
}

/** Every proper prefix of `bytes` is "not yet" and consumes nothing; the whole is read completely. */
function readsOnlyWhenComplete<T>(bytes: Buffer, read: (r: ByteReader) => T): T {
  for (let k = 0; k < bytes.length; k++) {
    const r = readerOf(bytes.subarray(0, k));
    expect(read(r), `prefix of ${k} bytes`).toBeFalsy();
    expect(r.consumed, `prefix of ${k} bytes`).toBe(0);
  }
  const r = readerOf(bytes);
  const result = read(r);
  expect(r.available).toBe(0);
  return result;
}

const u32 = (v: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v);
  return b;
};
const reason = (text: string): Buffer => Buffer.concat([u32(Buffer.byteLength(text)), Buffer.from(text)]);

describe('handshake readers', () => {
  it('maps the server version to the one we speak', () => {
    const v = (banner: string): unknown => readProtocolVersion(readerOf(Buffer.from(banner, 'latin1')));
    expect(readsOnlyWhenComplete(Buffer.from('RFB 003.008\n'), readProtocolVersion)).toBe(8);
    expect([v('RFB 003.889\n'), v('RFB 003.007\n'), v('RFB 003.005\n'), v('RFB 003.003\n')]).toEqual([8, 7, 3, 3]);
    expect(() => v('RFB 003.002\n')).toThrow('unsupported RFB protocol version 3.2');
    expect(() => v('RFB 004.000\n')).toThrow('unsupported RFB protocol version 4.0');
    expect(() => v('HTTP/1.1 200')).toThrow('not an RFB server: got "HTTP/1.1 200"');
  });

  it('3.3: accepts None and reads a refusal reason only once it is complete', () => {
    expect(readsOnlyWhenComplete(u32(1), readSecurityType33)).toBe(true);
    const refusal = Buffer.concat([u32(0), reason('go away')]);
    for (let k = 0; k < refusal.length; k++) expect(readSecurityType33(readerOf(refusal.subarray(0, k)))).toBe(false);
    expect(() => readSecurityType33(readerOf(refusal))).toThrow('RFB server refused the connection: go away');
    expect(() => readSecurityType33(readerOf(u32(2)))).toThrow('RFB server requires security type 2; only None (1) is supported');
  });

  it('3.7+: finds None in the list, or says what was offered; a count of 0 carries a reason', () => {
    expect(readsOnlyWhenComplete(Buffer.from([3, 2, 16, 1]), readSecurityTypes)).toBe(true);
    expect(() => readSecurityTypes(readerOf(Buffer.from([2, 2, 16])))).toThrow('RFB server offers security types [2, 16] but not None (1)');
    expect(() => readSecurityTypes(readerOf(Buffer.concat([Buffer.from([0]), reason('')])))).toThrow(
      'RFB server refused the connection: (no reason given)',
    );
  });

  it('3.8 SecurityResult: OK, or the failure with its reason', () => {
    expect(readsOnlyWhenComplete(u32(0), readSecurityResult)).toBe(true);
    const failed = Buffer.concat([u32(1), reason('Authentication failure')]);
    for (let k = 0; k < failed.length; k++) expect(readSecurityResult(readerOf(failed.subarray(0, k)))).toBe(false);
    expect(() => readSecurityResult(readerOf(failed))).toThrow('RFB security handshake failed: Authentication failure');
  });

  it('ServerInit: size and name, and refuses an implausible name length before waiting for it', () => {
    const init = Buffer.alloc(24);
    init.writeUInt16BE(1280, 0);
    init.writeUInt16BE(800, 2);
    const name = Buffer.from('dés', 'utf8'); // 4 bytes: the length is in bytes, the name UTF-8
    init.writeUInt32BE(name.length, 20);
    expect(readsOnlyWhenComplete(Buffer.concat([init, name]), readServerInit)).toEqual({
      width: 1280,
      height: 800,
      name: 'dés',
    });
    init.writeUInt32BE(2 ** 21, 20);
    expect(() => readServerInit(readerOf(init))).toThrow('RFB ServerInit name length 2097152 is implausible');
  });
});
