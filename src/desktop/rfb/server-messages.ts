import type { ByteReader } from './byte-reader.js';
import type { Rect } from './decoders/decoder.js';
import { MAX_STRING } from './handshake.js';
import {
  FRAMEBUFFER_UPDATE_HEADER_LENGTH,
  RECT_HEADER_LENGTH,
  SCREEN_LENGTH,
  ServerMessage,
  ServerMessageLength as Len,
} from './protocol.js';

/**
 * Server → client messages after the handshake, read off the queue one at a time. Each reader consumes a
 * whole message (or header) only once it is all there and returns undefined until then; what it means
 * for the connection is the client's business.
 */
export type ServerEvent =
  /** A FramebufferUpdate header: this many rects follow (0xffff: until a LastRect). */
  | { kind: 'framebuffer-update'; rects: number }
  /** A payload to throw away as it arrives: colour map entries we never asked for, Extended Clipboard, oversized cut text. */
  | { kind: 'discard'; bytes: number }
  | { kind: 'bell' }
  | { kind: 'cut-text'; text: string }
  | { kind: 'end-of-continuous-updates' }
  | { kind: 'fence'; flags: number; payload: Buffer };

export function readServerMessage(r: ByteReader): ServerEvent | undefined {
  if (!r.has(1)) return undefined;
  const type = r.peekU8();
  switch (type) {
    case ServerMessage.FramebufferUpdate: {
      if (!r.has(FRAMEBUFFER_UPDATE_HEADER_LENGTH)) return undefined;
      r.skip(2);
      return { kind: 'framebuffer-update', rects: r.readU16() };
    }
    case ServerMessage.SetColourMapEntries: {
      if (!r.has(Len.SetColourMapEntriesHeader)) return undefined;
      r.skip(Len.SetColourMapEntriesHeader - 2);
      return { kind: 'discard', bytes: Len.Colour * r.readU16() };
    }
    case ServerMessage.Bell:
      r.skip(1);
      return { kind: 'bell' };
    case ServerMessage.ServerCutText: {
      if (!r.has(Len.ServerCutTextHeader)) return undefined;
      const length = r.peekS32(4);
      // A negative length is the Extended Clipboard pseudo-encoding's framing: |length| bytes of binary payload.
      if (length < 0 || length > MAX_STRING) {
        r.skip(Len.ServerCutTextHeader);
        return { kind: 'discard', bytes: Math.abs(length) };
      }
      if (!r.has(Len.ServerCutTextHeader + length)) return undefined;
      r.skip(Len.ServerCutTextHeader);
      return { kind: 'cut-text', text: r.readBytes(length).toString('latin1') };
    }
    case ServerMessage.EndOfContinuousUpdates:
      r.skip(1);
      return { kind: 'end-of-continuous-updates' };
    case ServerMessage.ServerFence: {
      if (!r.has(Len.ServerFenceHeader)) return undefined;
      const length = r.peekU8(Len.ServerFenceHeader - 1);
      if (!r.has(Len.ServerFenceHeader + length)) return undefined;
      r.skip(4);
      const flags = r.readU32();
      r.skip(1);
      return { kind: 'fence', flags, payload: r.readBytes(length) };
    }
    default:
      throw new Error(`unknown RFB server message type ${type}`);
  }
}

export function readRectHeader(r: ByteReader): Rect | undefined {
  if (!r.has(RECT_HEADER_LENGTH)) return undefined;
  return { x: r.readU16(), y: r.readU16(), width: r.readU16(), height: r.readU16(), encoding: r.readS32() };
}

/** ExtendedDesktopSize's payload: u8 screen count, 3 padding, the screens; we keep the first one's id and flags. */
export function readExtendedDesktopSize(r: ByteReader): { screen: { id: number; flags: number } | undefined } | undefined {
  if (!r.has(4)) return undefined;
  const count = r.peekU8();
  if (!r.has(4 + SCREEN_LENGTH * count)) return undefined;
  r.skip(4);
  const screens = r.readBytes(SCREEN_LENGTH * count);
  return { screen: count > 0 ? { id: screens.readUInt32BE(0), flags: screens.readUInt32BE(12) } : undefined };
}
