import { ClientMessage, ClientMessageLength, SCREEN_LENGTH, protocolVersionBanner } from './protocol.js';

/**
 * The client → server messages RfbClient sends, as bytes (noVNC's `RFB.messages`). Pure functions, so
 * their layout is tested without a connection.
 */

export function protocolVersion(minor: 3 | 7 | 8): Buffer {
  return protocolVersionBanner(3, minor);
}

/** The security type chosen from the server's list (3.7+), or ClientInit's shared flag: one byte either way. */
export function singleByte(value: number): Buffer {
  return Buffer.of(value);
}

/**
 * SetPixelFormat: 32 bpp, depth 24, little-endian true colour with red at bit 16, green 8, blue 0 — BGRX
 * in memory. The server converts to whatever is asked, so the decoders only ever see this format.
 */
export function setPixelFormatBgrx(): Buffer {
  const msg = Buffer.alloc(ClientMessageLength.SetPixelFormat);
  msg[0] = ClientMessage.SetPixelFormat;
  msg[4] = 32; // bits per pixel
  msg[5] = 24; // depth
  msg[6] = 0; // little-endian
  msg[7] = 1; // true colour
  msg.writeUInt16BE(255, 8); // red max
  msg.writeUInt16BE(255, 10); // green max
  msg.writeUInt16BE(255, 12); // blue max
  msg[14] = 16; // red shift
  msg[15] = 8; // green shift
  msg[16] = 0; // blue shift
  return msg;
}

export function setEncodings(encodings: readonly number[]): Buffer {
  const msg = Buffer.alloc(ClientMessageLength.SetEncodingsHeader + 4 * encodings.length);
  msg[0] = ClientMessage.SetEncodings;
  msg.writeUInt16BE(encodings.length, 2);
  encodings.forEach((e, i) => msg.writeInt32BE(e, ClientMessageLength.SetEncodingsHeader + 4 * i));
  return msg;
}

/** FramebufferUpdateRequest for the whole screen. */
export function framebufferUpdateRequest(incremental: boolean, width: number, height: number): Buffer {
  const msg = Buffer.alloc(ClientMessageLength.FramebufferUpdateRequest);
  msg[0] = ClientMessage.FramebufferUpdateRequest;
  msg[1] = incremental ? 1 : 0;
  msg.writeUInt16BE(width, 6);
  msg.writeUInt16BE(height, 8);
  return msg;
}

/** EnableContinuousUpdates (enable = 1) for the whole screen. */
export function enableContinuousUpdates(width: number, height: number): Buffer {
  const msg = Buffer.alloc(ClientMessageLength.EnableContinuousUpdates);
  msg[0] = ClientMessage.EnableContinuousUpdates;
  msg[1] = 1;
  msg.writeUInt16BE(width, 6);
  msg.writeUInt16BE(height, 8);
  return msg;
}

export function keyEvent(keysym: number, down: boolean): Buffer {
  const msg = Buffer.alloc(ClientMessageLength.KeyEvent);
  msg[0] = ClientMessage.KeyEvent;
  msg[1] = down ? 1 : 0;
  msg.writeUInt32BE(keysym >>> 0, 4);
  return msg;
}

/** PointerEvent; coordinates are rounded and clamped to the u16 range the wire allows. */
export function pointerEvent(x: number, y: number, buttonMask: number): Buffer {
  const msg = Buffer.alloc(ClientMessageLength.PointerEvent);
  msg[0] = ClientMessage.PointerEvent;
  msg[1] = buttonMask & 0xff;
  msg.writeUInt16BE(clampU16(x), 2);
  msg.writeUInt16BE(clampU16(y), 4);
  return msg;
}

/** SetDesktopSize with a single screen at 0,0 that keeps the server's screen id and flags. */
export function setDesktopSize(width: number, height: number, screen: { id: number; flags: number }): Buffer {
  const header = ClientMessageLength.SetDesktopSizeHeader;
  const msg = Buffer.alloc(header + SCREEN_LENGTH);
  msg[0] = ClientMessage.SetDesktopSize;
  msg.writeUInt16BE(width, 2);
  msg.writeUInt16BE(height, 4);
  msg[6] = 1; // number of screens
  msg.writeUInt32BE(screen.id, header);
  msg.writeUInt16BE(0, header + 4); // x
  msg.writeUInt16BE(0, header + 6); // y
  msg.writeUInt16BE(width, header + 8);
  msg.writeUInt16BE(height, header + 10);
  msg.writeUInt32BE(screen.flags, header + 12);
  return msg;
}

export function clientFence(flags: number, payload: Uint8Array): Buffer {
  const header = ClientMessageLength.ClientFenceHeader;
  const msg = Buffer.alloc(header + payload.length);
  msg[0] = ClientMessage.ClientFence;
  msg.writeUInt32BE(flags >>> 0, 4);
  msg[8] = payload.length;
  msg.set(payload, header);
  return msg;
}

function clampU16(v: number): number {
  return Math.max(0, Math.min(0xffff, Math.round(v)));
}

/** ClientCutText: clipboard text, latin-1 as the base protocol defines it (RFC 6143 §7.5.6). */
export function clientCutText(text: string): Buffer {
  const body = Buffer.from(text, 'latin1');
  const msg = Buffer.alloc(ClientMessageLength.ClientCutTextHeader + body.length);
  msg[0] = ClientMessage.ClientCutText;
  msg.writeUInt32BE(body.length, 4);
  body.copy(msg, ClientMessageLength.ClientCutTextHeader);
  return msg;
}
