import {
  ClientMessage,
  ClientMessageLength as Len,
  DesktopSizeReason,
  DesktopSizeStatus,
  Encoding,
  PROTOCOL_VERSION_LENGTH,
  RECT_COUNT_UNTIL_LAST_RECT,
  RECT_HEADER_LENGTH,
  SCREEN_LENGTH,
  SERVER_INIT_LENGTH,
  SecurityResult,
  SecurityType,
  ServerMessage,
  protocolVersionBanner,
} from '../protocol.js';
import { hextileEncode, type TileMode } from './hextile-encode.js';
import type { ByteTransport } from '../transport.js';

/**
 * An in-memory RFB server for RfbClient's tests: just enough of the server side (handshake, ServerInit,
 * Raw/CopyRect/DesktopSize/ExtendedDesktopSize updates, SetDesktopSize) to drive the client, with optional
 * chunking of its output so the client's parser sees messages split at every possible boundary.
 * Not for production use (the build leaves out every `test/` folder).
 *
 * Over 400 lines because it is a whole, if small, server: both directions of the pipe, the handshake for
 * three protocol versions and every update type the client decodes. Split up, one fixture would be scattered.
 */

export interface FakeRfbServerOptions {
  width: number;
  height: number;
  name?: string;
  version?: '3.3' | '3.7' | '3.8';
  /** Offer security type None (default true); when false only VNC Authentication (2) is offered. */
  offerNone?: boolean;
  /** 3.7/3.8 only: offer no security types at all and send this failure reason instead. */
  refuseReason?: string;
  /** 3.8 only: accept the choice of None, then fail the SecurityResult with this reason. */
  securityFailure?: string;
  /** Split server output into pieces of this many bytes, or random 1–7 byte pieces; each arrives in its own tick. */
  chunkSize?: number | 'random';
  /** Answer SetDesktopSize with status 1 (prohibited) instead of resizing. */
  refuseResize?: boolean;
  /** Initial framebuffer colour (default black). */
  fill?: [number, number, number];
  /** Id of the single screen reported in ExtendedDesktopSize (default 0). */
  screenId?: number;
  /** 'close-after-version': hang up once the client's version arrives; 'silent': never say anything. */
  behaviour?: 'normal' | 'close-after-version' | 'silent';
}

export interface ResizeRequest {
  width: number;
  height: number;
  screens: { id: number; x: number; y: number; width: number; height: number; flags: number }[];
}

export interface FakeRfbServer {
  /** The client's side of the pipe. */
  transport: ByteTransport;
  /** Every chunk the client wrote, as written. */
  received: Buffer[];
  /** Encodings from the client's last SetEncodings. */
  readonly encodings: number[];
  /** SetDesktopSize requests received. */
  readonly resizeRequests: ResizeRequest[];
  readonly width: number;
  readonly height: number;
  /** True once the client closed its side. */
  readonly clientClosed: boolean;
  /** The server's framebuffer as RGBA (alpha 255), to compare with the client's copy. */
  rgba(): Uint8Array;
  /** Fills a rectangle and sends it as a Raw FramebufferUpdate. */
  paint(x: number, y: number, w: number, h: number, rgb: [number, number, number]): void;
  /** Applies a CopyRect to the server framebuffer and sends it. */
  copyRect(srcX: number, srcY: number, dstX: number, dstY: number, w: number, h: number): void;
  /** Resizes the server framebuffer (to black) and announces it with a DesktopSize rect. */
  desktopSize(width: number, height: number): void;
  /** Sends the whole framebuffer as Raw rects (two halves), optionally terminated by LastRect. */
  fullUpdate(opts?: { lastRect?: boolean }): void;
  /** Sends arbitrary bytes (for malformed or unusual messages). */
  sendRaw(bytes: Buffer): void;
  /** Hangs up from the server side (after any queued output). */
  close(): void;
}

type Rgb = [number, number, number];
const BLACK: Rgb = [0, 0, 0];
const CLOSE = Symbol('close');

export function fakeRfbServer(opts: FakeRfbServerOptions): FakeRfbServer {
  const version = opts.version ?? '3.8';
  let width = opts.width;
  let height = opts.height;
  let pixels: Rgb[] = Array.from({ length: width * height }, () => opts.fill ?? BLACK);
  // Native format deliberately differs from what RfbClient asks for (red in the low byte), so a client that
  // forgot SetPixelFormat would see red and blue swapped.
  let format = { bigEndian: false, redShift: 0, greenShift: 8, blueShift: 16 };
  let encodings: number[] = [];
  let extendedDesktopSizeAnnounced = false;
  let fullUpdateOwed = false;
  const resizeRequests: ResizeRequest[] = [];
  const received: Buffer[] = [];

  // ---- the pipe ----
  let dataListener: ((chunk: Buffer) => void) | undefined;
  const closeListeners: ((err?: Error) => void)[] = [];
  const outQueue: (Buffer | typeof CLOSE)[] = [];
  let pumping = false;
  let serverClosed = false;
  let clientClosed = false;
  let seed = 12345; // deterministic "random" chunking, so a failure reproduces

  function pieceSize(): number {
    if (opts.chunkSize === 'random') {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return 1 + (seed % 7);
    }
    return opts.chunkSize ?? Infinity;
  }

  function out(buf: Buffer): void {
    if (serverClosed) return;
    for (let at = 0; at < buf.length;) {
      const n = Math.min(pieceSize(), buf.length - at);
      outQueue.push(buf.subarray(at, at + n));
      at += n;
    }
    pump();
  }

  /** Delivers one queued piece per tick, like a real pipe, in order; CLOSE is delivered after the data before it. */
  function pump(): void {
    if (pumping || !dataListener) return;
    pumping = true;
    setImmediate(function next() {
      const item = outQueue.shift();
      if (item === undefined || clientClosed) {
        pumping = false;
        return;
      }
      if (item === CLOSE) {
        for (const l of closeListeners) l();
      } else {
        dataListener!(item);
      }
      setImmediate(next);
    });
  }

  const transport: ByteTransport = {
    write(chunk) {
      if (clientClosed || serverClosed) return;
      received.push(Buffer.from(chunk));
      inbox = Buffer.concat([inbox, chunk]);
      handleInbox();
    },
    onData(listener) {
      dataListener = listener;
      pump();
    },
    onClose(listener) {
      closeListeners.push(listener);
    },
    close() {
      if (clientClosed) return;
      clientClosed = true;
      setImmediate(() => closeListeners.forEach((l) => l()));
    },
  };

  // ---- client → server ----
  let inbox = Buffer.alloc(0);
  let stage: 'version' | 'security' | 'client-init' | 'normal' | 'dead' = 'version';

  function hangUp(): void {
    serverClosed = true;
    outQueue.push(CLOSE);
    pump();
  }

  function handleInbox(): void {
    for (;;) {
      const n = nextMessageLength();
      if (n === undefined || inbox.length < n) return;
      const msg = inbox.subarray(0, n);
      inbox = inbox.subarray(n);
      handleMessage(msg);
    }
  }

  /** Length of the next complete client message, or undefined if its header is incomplete. */
  function nextMessageLength(): number | undefined {
    switch (stage) {
      case 'version':
        return PROTOCOL_VERSION_LENGTH;
      case 'security':
      case 'client-init':
        return 1;
      case 'dead':
        return undefined;
      case 'normal':
        break;
    }
    const type = inbox[0];
    switch (type) {
      case undefined:
        return undefined;
      case ClientMessage.SetPixelFormat:
        return Len.SetPixelFormat;
      case ClientMessage.SetEncodings:
        return inbox.length < Len.SetEncodingsHeader ? undefined : Len.SetEncodingsHeader + 4 * inbox.readUInt16BE(2);
      case ClientMessage.FramebufferUpdateRequest:
        return Len.FramebufferUpdateRequest;
      case ClientMessage.KeyEvent:
        return Len.KeyEvent;
      case ClientMessage.PointerEvent:
        return Len.PointerEvent;
      case ClientMessage.ClientCutText:
        return inbox.length < Len.ClientCutTextHeader ? undefined : Len.ClientCutTextHeader + inbox.readUInt32BE(4);
      case ClientMessage.SetDesktopSize:
        return inbox.length < Len.SetDesktopSizeHeader ? undefined : Len.SetDesktopSizeHeader + SCREEN_LENGTH * inbox[6]!;
      case ClientMessage.ClientFence:
        return inbox.length < Len.ClientFenceHeader ? undefined : Len.ClientFenceHeader + inbox[8]!;
      default:
        throw new Error(`fake RFB server: unknown client message type ${type}`);
    }
  }

  function handleMessage(msg: Buffer): void {
    switch (stage) {
      case 'version': {
        if (opts.behaviour === 'close-after-version') {
          stage = 'dead';
          hangUp();
          return;
        }
        if (version === '3.3') {
          out(u32(opts.offerNone === false ? SecurityType.VncAuth : SecurityType.None));
          stage = 'client-init';
        } else if (opts.refuseReason !== undefined) {
          out(
            Buffer.concat([
              Buffer.from([0]) /* no security types: a reason follows */,
              u32(Buffer.byteLength(opts.refuseReason)),
              Buffer.from(opts.refuseReason),
            ]),
          );
          stage = 'dead';
          hangUp();
        } else {
          const types = opts.offerNone === false ? [SecurityType.VncAuth] : [SecurityType.VncAuth, SecurityType.None];
          out(Buffer.from([types.length, ...types]));
          stage = 'security';
        }
        return;
      }
      case 'security':
        if (msg[0] !== SecurityType.None) {
          stage = 'dead';
          hangUp();
          return;
        }
        if (version === '3.8' && opts.securityFailure !== undefined) {
          const reason = Buffer.from(opts.securityFailure);
          out(Buffer.concat([u32(SecurityResult.Failed), u32(reason.length), reason]));
          stage = 'dead';
          hangUp();
          return;
        }
        if (version === '3.8') out(u32(SecurityResult.Ok));
        stage = 'client-init';
        return;
      case 'client-init': {
        const name = Buffer.from(opts.name ?? 'fake');
        const init = Buffer.alloc(SERVER_INIT_LENGTH);
        init.writeUInt16BE(width, 0);
        init.writeUInt16BE(height, 2);
        init[4] = 32;
        init[5] = 24;
        init[6] = format.bigEndian ? 1 : 0;
        init[7] = 1;
        init.writeUInt16BE(255, 8);
        init.writeUInt16BE(255, 10);
        init.writeUInt16BE(255, 12);
        init[14] = format.redShift;
        init[15] = format.greenShift;
        init[16] = format.blueShift;
        init.writeUInt32BE(name.length, 20);
        out(Buffer.concat([init, name]));
        stage = 'normal';
        return;
      }
      default:
        break;
    }
    switch (msg[0]) {
      case ClientMessage.SetPixelFormat:
        if (msg[4] !== 32 || msg[7] !== 1) throw new Error('fake RFB server only speaks 32bpp true colour');
        format = { bigEndian: msg[6] !== 0, redShift: msg[14]!, greenShift: msg[15]!, blueShift: msg[16]! };
        return;
      case ClientMessage.SetEncodings:
        encodings = Array.from({ length: msg.readUInt16BE(2) }, (_, i) => msg.readInt32BE(Len.SetEncodingsHeader + 4 * i));
        return;
      case ClientMessage.FramebufferUpdateRequest: {
        // Like TigerVNC 1.12: a non-incremental request marks the whole screen as owed and is answered with a
        // layout-only ExtendedDesktopSize update, which also uses up the request, so the pixels come with the
        // client's next request. Incremental requests announce the layout once, deliver what is owed, and are
        // otherwise left unanswered (nothing changed); paint() and friends send their updates unasked.
        const nonIncremental = msg[1] === 0;
        if (nonIncremental) fullUpdateOwed = true;
        if (encodings.includes(Encoding.ExtendedDesktopSize) && (nonIncremental || !extendedDesktopSizeAnnounced)) {
          extendedDesktopSizeAnnounced = true;
          out(update([extendedDesktopSizeRect(DesktopSizeReason.Server, DesktopSizeStatus.Ok)]));
        } else if (fullUpdateOwed) {
          fullUpdateOwed = false;
          out(update(fullScreenRects()));
        }
        return;
      }
      case ClientMessage.SetDesktopSize: {
        const screens = Array.from({ length: msg[6]! }, (_, i) => {
          const s = msg.subarray(Len.SetDesktopSizeHeader + SCREEN_LENGTH * i);
          return {
            id: s.readUInt32BE(0),
            x: s.readUInt16BE(4),
            y: s.readUInt16BE(6),
            width: s.readUInt16BE(8),
            height: s.readUInt16BE(10),
            flags: s.readUInt32BE(12),
          };
        });
        const request = { width: msg.readUInt16BE(2), height: msg.readUInt16BE(4), screens };
        resizeRequests.push(request);
        if (opts.refuseResize) {
          out(update([extendedDesktopSizeRect(DesktopSizeReason.ThisClient, DesktopSizeStatus.Prohibited)]));
        } else {
          // Like Xvnc: the new layout is first reported as a server-side change (reason 0), then answered.
          resizeFramebuffer(request.width, request.height);
          const { Server, ThisClient } = DesktopSizeReason;
          out(update([extendedDesktopSizeRect(Server, DesktopSizeStatus.Ok)]));
          out(update([extendedDesktopSizeRect(Server, DesktopSizeStatus.Ok), extendedDesktopSizeRect(ThisClient, DesktopSizeStatus.Ok)]));
        }
        return;
      }
      case ClientMessage.ClientFence: {
        // Like TigerVNC: a fence request is answered at once, in order, with Request cleared.
        const flags = msg.readUInt32BE(4);
        if (flags & 0x80000000) {
          const reply = Buffer.from(msg);
          reply.writeUInt32BE((flags & 0x7) >>> 0, 4);
          out(reply);
        }
        return;
      }
      default:
        return; // key, pointer, cut text: recorded in `received` only
    }
  }

  // ---- server → client ----

  function u32(v: number): Buffer {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(v >>> 0);
    return b;
  }

  function rectHeader(x: number, y: number, w: number, h: number, encoding: number): Buffer {
    const b = Buffer.alloc(RECT_HEADER_LENGTH);
    b.writeUInt16BE(x, 0);
    b.writeUInt16BE(y, 2);
    b.writeUInt16BE(w, 4);
    b.writeUInt16BE(h, 6);
    b.writeInt32BE(encoding, 8);
    return b;
  }

  function update(rects: Buffer[], lastRect = false): Buffer {
    const header = Buffer.from([ServerMessage.FramebufferUpdate, 0, 0, 0]);
    header.writeUInt16BE(lastRect ? RECT_COUNT_UNTIL_LAST_RECT : rects.length, 2);
    return Buffer.concat([header, ...rects, ...(lastRect ? [rectHeader(0, 0, 0, 0, Encoding.LastRect)] : [])]);
  }

  function rawRect(x: number, y: number, w: number, h: number): Buffer {
    const data = Buffer.alloc(w * h * 4);
    for (let row = 0; row < h; row++) {
      for (let col = 0; col < w; col++) {
        const [r, g, b] = pixels[(y + row) * width + x + col]!;
        const v = ((r << format.redShift) | (g << format.greenShift) | (b << format.blueShift)) >>> 0;
        const at = (row * w + col) * 4;
        if (format.bigEndian) data.writeUInt32BE(v, at);
        else data.writeUInt32LE(v, at);
      }
    }
    return Buffer.concat([rectHeader(x, y, w, h, Encoding.Raw), data]);
  }

  /** Hextile when the client prefers it to Raw (as TigerVNC picks the first encoding it knows), else Raw. */
  function pixelRect(x: number, y: number, w: number, h: number): Buffer {
    const hextile = encodings.indexOf(Encoding.Hextile);
    const raw = encodings.indexOf(Encoding.Raw);
    if (hextile < 0 || (raw >= 0 && raw < hextile) || format.bigEndian) return rawRect(x, y, w, h);
    const values: number[] = [];
    for (let row = 0; row < h; row++) {
      for (let col = 0; col < w; col++) {
        const [r, g, b] = pixels[(y + row) * width + x + col]!;
        values.push(((r << format.redShift) | (g << format.greenShift) | (b << format.blueShift)) >>> 0);
      }
    }
    const modes: TileMode[] = ['subrects', 'raw', 'fill'];
    return Buffer.concat([rectHeader(x, y, w, h, Encoding.Hextile), hextileEncode(w, h, values, (t) => modes[t % modes.length]!)]);
  }

  function fullScreenRects(): Buffer[] {
    const top = Math.floor(height / 2);
    return top > 0 ? [rawRect(0, 0, width, top), rawRect(0, top, width, height - top)] : [rawRect(0, 0, width, height)];
  }

  function extendedDesktopSizeRect(reason: number, status: number): Buffer {
    const screens = Buffer.alloc(4 + SCREEN_LENGTH);
    screens[0] = 1;
    screens.writeUInt32BE(opts.screenId ?? 0, 4);
    screens.writeUInt16BE(width, 12);
    screens.writeUInt16BE(height, 14);
    return Buffer.concat([rectHeader(reason, status, width, height, Encoding.ExtendedDesktopSize), screens]);
  }

  function resizeFramebuffer(w: number, h: number): void {
    width = w;
    height = h;
    pixels = Array.from({ length: w * h }, () => BLACK);
  }

  if (opts.behaviour !== 'silent') out(protocolVersionBanner(3, Number(version.slice(2))));

  return {
    transport,
    received,
    get encodings() {
      return encodings;
    },
    resizeRequests,
    get width() {
      return width;
    },
    get height() {
      return height;
    },
    get clientClosed() {
      return clientClosed;
    },
    rgba() {
      const rgba = new Uint8Array(width * height * 4);
      pixels.forEach((p, i) => rgba.set([...p, 255], i * 4));
      return rgba;
    },
    paint(x, y, w, h, rgb) {
      for (let row = y; row < y + h; row++) for (let col = x; col < x + w; col++) pixels[row * width + col] = rgb;
      out(update([pixelRect(x, y, w, h)]));
    },
    copyRect(srcX, srcY, dstX, dstY, w, h) {
      const copy = pixels.slice();
      for (let row = 0; row < h; row++) {
        for (let col = 0; col < w; col++) pixels[(dstY + row) * width + dstX + col] = copy[(srcY + row) * width + srcX + col]!;
      }
      const src = Buffer.alloc(4);
      src.writeUInt16BE(srcX, 0);
      src.writeUInt16BE(srcY, 2);
      out(update([Buffer.concat([rectHeader(dstX, dstY, w, h, Encoding.CopyRect), src])]));
    },
    desktopSize(w, h) {
      resizeFramebuffer(w, h);
      out(update([rectHeader(0, 0, w, h, Encoding.DesktopSize)]));
    },
    fullUpdate(o = {}) {
      out(update(fullScreenRects(), o.lastRect));
    },
    sendRaw(bytes) {
      out(bytes);
    },
    close() {
      if (!serverClosed) hangUp();
    },
  };
}
