/**
 * The RFB (VNC) protocol's numbers, in one table (after noVNC's `core/encodings.js` and `RFB.messages`).
 * The client, the input filter and the test server all read them from here, so a message type or an
 * encoding is spelled the same everywhere and no bare number stands in for it.
 * Spec: https://github.com/rfbproto/rfbproto (RFC 6143 plus the community extensions).
 */

/** The 12-byte ProtocolVersion banner, `RFB xxx.yyy\n`, both directions. */
export const PROTOCOL_VERSION_LENGTH = 12;
export const PROTOCOL_VERSION_PATTERN = /^RFB (\d{3})\.(\d{3})\n$/;

export function protocolVersionBanner(major: number, minor: number): Buffer {
  return Buffer.from(`RFB ${String(major).padStart(3, '0')}.${String(minor).padStart(3, '0')}\n`, 'latin1');
}

/** Security types (RFC 6143 §7.1.2). `Invalid` in the type list means "refused, a reason follows". */
export const SecurityType = {
  Invalid: 0,
  None: 1,
  VncAuth: 2,
} as const;

/** SecurityResult (RFC 6143 §7.1.3). */
export const SecurityResult = {
  Ok: 0,
  Failed: 1,
} as const;

/** ClientInit's only byte: 1 = share the desktop with other viewers, 0 = ask the server to drop them. */
export const ClientInitFlag = {
  Exclusive: 0,
  Shared: 1,
} as const;

/** ServerInit: u16 width, u16 height, 16-byte pixel format, u32 name length (then the name). */
export const SERVER_INIT_LENGTH = 24;
/** SetPixelFormat / ServerInit pixel format block. */
export const PIXEL_FORMAT_LENGTH = 16;

/** Client → server message types. */
export const ClientMessage = {
  SetPixelFormat: 0,
  SetEncodings: 2,
  FramebufferUpdateRequest: 3,
  KeyEvent: 4,
  PointerEvent: 5,
  ClientCutText: 6,
  EnableContinuousUpdates: 150,
  ClientFence: 248,
  Xvp: 250,
  SetDesktopSize: 251,
  Qemu: 255,
} as const;

/** Submessages of ClientMessage.Qemu (byte 1). */
export const QemuClientMessage = {
  ExtendedKeyEvent: 0,
  Audio: 1,
} as const;

/** QEMU audio operations (u16 after the submessage); SetFormat carries 6 more bytes. */
export const QemuAudioOperation = {
  Enable: 0,
  Disable: 1,
  SetFormat: 2,
} as const;

/** Server → client message types. */
export const ServerMessage = {
  FramebufferUpdate: 0,
  SetColourMapEntries: 1,
  Bell: 2,
  ServerCutText: 3,
  EndOfContinuousUpdates: 150,
  ServerFence: 248,
} as const;

/** Fixed lengths of client messages whose size does not depend on their content. */
export const ClientMessageLength = {
  SetPixelFormat: 20,
  FramebufferUpdateRequest: 10,
  KeyEvent: 8,
  PointerEvent: 6,
  EnableContinuousUpdates: 10,
  Xvp: 4,
  QemuExtendedKeyEvent: 12,
  QemuAudio: 4,
  QemuAudioSetFormat: 10,
  /** Header before the variable part: SetEncodings (then 4 per encoding), cut text (then the text), … */
  SetEncodingsHeader: 4,
  ClientCutTextHeader: 8,
  ClientFenceHeader: 9,
  SetDesktopSizeHeader: 8,
} as const;

/** Headers of server messages before their variable part. */
export const ServerMessageLength = {
  /** type, padding, u16 first colour, u16 count; then 6 bytes per colour. */
  SetColourMapEntriesHeader: 6,
  /** type, 3 padding, s32 length; then the text. */
  ServerCutTextHeader: 8,
  /** type, 3 padding, u32 flags, u8 length; then the payload. */
  ServerFenceHeader: 9,
  /** Each SetColourMapEntries colour: u16 red, green, blue. */
  Colour: 6,
} as const;

/** FramebufferUpdate header (type, padding, u16 rect count) and each rect's header (x, y, w, h, s32 encoding). */
export const FRAMEBUFFER_UPDATE_HEADER_LENGTH = 4;
export const RECT_HEADER_LENGTH = 12;
/** A rect count of 0xffff means "until a LastRect". */
export const RECT_COUNT_UNTIL_LAST_RECT = 0xffff;

/** Encodings, pseudo-encodings included (negative numbers). */
export const Encoding = {
  Raw: 0,
  CopyRect: 1,
  RRE: 2,
  Hextile: 5,
  Tight: 7,
  ZRLE: 16,
  DesktopSize: -223,
  LastRect: -224,
  ExtendedDesktopSize: -308,
  Fence: -312,
  ContinuousUpdates: -313,
} as const;

/** One screen in SetDesktopSize / ExtendedDesktopSize: u32 id, u16 x, y, width, height, u32 flags. */
export const SCREEN_LENGTH = 16;

/** ExtendedDesktopSize: why the layout is reported (the rect's x field). */
export const DesktopSizeReason = {
  Server: 0,
  /** The answer to this client's own SetDesktopSize. */
  ThisClient: 1,
  OtherClient: 2,
} as const;

/** ExtendedDesktopSize: the outcome of a SetDesktopSize (the rect's y field), with the spec's meaning. */
export const DesktopSizeStatus = {
  Ok: 0,
  Prohibited: 1,
  OutOfResources: 2,
  InvalidLayout: 3,
} as const;

export const DESKTOP_SIZE_STATUS_TEXT: Readonly<Record<number, string>> = {
  [DesktopSizeStatus.Prohibited]: 'resize is administratively prohibited',
  [DesktopSizeStatus.OutOfResources]: 'out of resources',
  [DesktopSizeStatus.InvalidLayout]: 'invalid screen layout',
};

/** Fence flags; a reply clears Request and keeps only the flags it understands. */
export const FenceFlag = {
  BlockBefore: 1 << 0,
  BlockAfter: 1 << 1,
  SyncNext: 1 << 2,
  Request: 0x80000000,
} as const;
export const FENCE_FLAGS_SUPPORTED = FenceFlag.BlockBefore | FenceFlag.BlockAfter | FenceFlag.SyncNext;
/** RFC 6143 §7.7.5 (fence extension): a fence carries at most 64 bytes of data. */
export const MAX_FENCE_DATA = 64;
