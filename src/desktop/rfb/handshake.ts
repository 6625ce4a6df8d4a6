import type { ByteReader } from './byte-reader.js';
import { PROTOCOL_VERSION_LENGTH, PROTOCOL_VERSION_PATTERN, SERVER_INIT_LENGTH, SecurityResult, SecurityType } from './protocol.js';

/**
 * The server's side of the handshake (RFC 6143 §7.1–7.3), one reader per step. Each consumes its step's
 * bytes only once they are all queued and returns undefined (or false) until then; a server that refuses
 * or says something we cannot speak is a thrown Error with its reason. The client decides what to send
 * and which state comes next.
 */

/** The version both sides will speak: 3.3, 3.7 or 3.8. */
export type RfbVersion = 3 | 7 | 8;

/** Server name, failure reasons and cut text larger than this are not kept. */
export const MAX_STRING = 1 << 20;

export function readProtocolVersion(r: ByteReader): RfbVersion | undefined {
  if (!r.has(PROTOCOL_VERSION_LENGTH)) return undefined;
  const banner = r.readBytes(PROTOCOL_VERSION_LENGTH).toString('latin1');
  const m = PROTOCOL_VERSION_PATTERN.exec(banner);
  if (!m) throw new Error(`not an RFB server: got ${JSON.stringify(banner)}`);
  const major = Number(m[1]);
  const minor = Number(m[2]);
  if (major !== 3 || minor < 3) throw new Error(`unsupported RFB protocol version ${major}.${minor}`);
  // Anything newer than 3.8 (e.g. Apple's 3.889) is answered with 3.8; 3.4-3.6 must be treated as 3.3.
  return minor >= 8 ? 8 : minor === 7 ? 7 : 3;
}

/** 3.3: the server decides the security type (u32); true once it said None. */
export function readSecurityType33(r: ByteReader): boolean {
  if (!r.has(4)) return false;
  const type = r.peekU32();
  if (type === SecurityType.Invalid) return refused(r, 4, 'RFB server refused the connection');
  if (type !== SecurityType.None)
    throw new Error(`RFB server requires security type ${type}; only None (${SecurityType.None}) is supported`);
  r.skip(4);
  return true;
}

/** 3.7+: u8 count, then that many types (a count of 0 means refused, with a reason); true once None is among them. */
export function readSecurityTypes(r: ByteReader): boolean {
  if (!r.has(1)) return false;
  const count = r.peekU8();
  if (count === 0) return refused(r, 1, 'RFB server refused the connection');
  if (!r.has(1 + count)) return false;
  r.skip(1);
  const types = [...r.readBytes(count)];
  if (!types.includes(SecurityType.None)) {
    throw new Error(`RFB server offers security types [${types.join(', ')}] but not None (${SecurityType.None})`);
  }
  return true;
}

/** 3.8's SecurityResult (u32, then a reason on failure); true once it said OK. */
export function readSecurityResult(r: ByteReader): boolean {
  if (!r.has(4)) return false;
  if (r.peekU32() !== SecurityResult.Ok) return refused(r, 4, 'RFB security handshake failed');
  r.skip(4);
  return true;
}

export interface ServerInit {
  width: number;
  height: number;
  name: string;
}

/** ServerInit: size, the server's pixel format (ignored: the client sets its own), and the desktop name. */
export function readServerInit(r: ByteReader): ServerInit | undefined {
  if (!r.has(SERVER_INIT_LENGTH)) return undefined;
  const nameLength = r.peekU32(SERVER_INIT_LENGTH - 4);
  if (nameLength > MAX_STRING) throw new Error(`RFB ServerInit name length ${nameLength} is implausible`);
  if (!r.has(SERVER_INIT_LENGTH + nameLength)) return undefined;
  const width = r.readU16();
  const height = r.readU16();
  r.skip(SERVER_INIT_LENGTH - 4); // pixel format and the name length
  return { width, height, name: r.readBytes(nameLength).toString('utf8') };
}

/**
 * A refusal: a u32-length-prefixed reason `offset` bytes in. Throws `what: reason` once the reason is all
 * there; returns false until then.
 */
function refused(r: ByteReader, offset: number, what: string): false {
  if (!r.has(offset + 4)) return false;
  const length = Math.min(r.peekU32(offset), MAX_STRING);
  if (!r.has(offset + 4 + length)) return false;
  r.skip(offset + 4);
  throw new Error(`${what}: ${r.readBytes(length).toString('utf8') || '(no reason given)'}`);
}
