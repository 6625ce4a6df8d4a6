/**
 * Gate on the client→server RFB stream of ONE viewer (noVNC → relay → Xvnc).
 *
 * Several viewers may watch one desktop, but only the holder of the control lease may type, point, paste
 * or resize. The filter parses the stream message by message (RFC 6143 plus the extensions noVNC
 * speaks), forwards everything that only concerns this viewer's own picture, and forwards input only
 * while `mayControl()` says so. It must understand EVERY message: a message it could not size would
 * desynchronise it from the server, and bytes the server reads as a KeyEvent could then pass as
 * something harmless. So anything unknown or malformed is a protocol error and the caller closes.
 *
 * Works across arbitrary chunking. Only an incomplete message is held back; its length is known from
 * its header (at most 12 bytes) before its payload is buffered, which is what bounds memory.
 */

import {
  ClientInitFlag,
  ClientMessage,
  ClientMessageLength as Len,
  MAX_FENCE_DATA,
  PROTOCOL_VERSION_LENGTH,
  PROTOCOL_VERSION_PATTERN,
  QemuAudioOperation,
  QemuClientMessage,
  SCREEN_LENGTH,
  SecurityType,
} from './protocol.js';

export type InputDecision = 'allow' | 'drop';

export class RfbProtocolError extends Error {
  constructor(
    readonly reason: 'unknown_message' | 'clipboard_too_large' | 'buffer_overflow' | 'bad_handshake',
    message: string,
  ) {
    super(message);
    this.name = 'RfbProtocolError';
  }
}

export interface RfbInputFilterOptions {
  /** Asked for every input message (key, pointer, clipboard, resize, QEMU key): may this viewer act now? */
  mayControl: () => boolean;
  /** Largest client clipboard accepted (default 256 KiB). */
  maxClipboardBytes?: number;
  /** Told of each message that goes through (after the lease check), by name, e.g. `SetDesktopSize`. */
  onForwarded?: (name: string) => void;
}

const DEFAULT_MAX_CLIPBOARD = 256 * 1024;
/** Headroom above the clipboard limit for every other message (the next largest is a SetEncodings). */
const BUFFER_HEADROOM = 64 * 1024;

/** One complete message as the parser sized it: its name, total length, and whether it is input. */
interface Frame {
  name: string;
  length: number;
  input: boolean;
}

type Stage = 'version' | 'security' | 'init' | 'messages';

export class RfbInputFilter {
  /** Message counters: `forwarded`/`dropped` count whole messages (handshake steps included), `messages` counts by name. */
  readonly stats: { forwarded: number; dropped: number; messages: Record<string, number> } = {
    forwarded: 0,
    dropped: 0,
    messages: {},
  };

  private readonly mayControl: () => boolean;
  private readonly maxClipboard: number;
  private readonly maxBuffered: number;
  private readonly onForwarded: ((name: string) => void) | undefined;
  private stage: Stage = 'version';
  /** Unconsumed bytes, kept as a list of slices so byte-by-byte input of a large message stays linear. */
  private parts: Buffer[] = [];
  private size = 0;
  /** The message at the front once its header has been read, so the header is parsed only once. */
  private current: Frame | undefined;
  /** After a protocol error the stream is unusable: every later push rethrows it. */
  private failure: RfbProtocolError | undefined;

  constructor(opts: RfbInputFilterOptions) {
    this.mayControl = opts.mayControl;
    this.maxClipboard = opts.maxClipboardBytes ?? DEFAULT_MAX_CLIPBOARD;
    this.maxBuffered = BUFFER_HEADROOM + this.maxClipboard;
    this.onForwarded = opts.onForwarded;
  }

  /** Bytes held back as the start of an incomplete message (diagnostics; never above the cap). */
  get buffered(): number {
    return this.size;
  }

  /**
   * Feed raw bytes from the viewer; returns the bytes to forward to the server (possibly empty; it may
   * share memory with `chunk`). Throws RfbProtocolError on a protocol violation (the caller closes the
   * connection).
   */
  push(chunk: Buffer): Buffer {
    if (this.failure) throw this.failure;
    if (chunk.length) {
      this.parts.push(chunk);
      this.size += chunk.length;
    }
    const out: Buffer[] = [];
    try {
      for (;;) {
        const frame = this.current ?? (this.current = this.stage === 'messages' ? this.sizeMessage() : this.handshake());
        if (!frame || this.size < frame.length) break;
        this.current = undefined;
        const bytes = this.take(frame.length);
        this.stats.messages[frame.name] = (this.stats.messages[frame.name] ?? 0) + 1;
        // Asked only now that the message is complete, so the lease at that moment decides, and the
        // message goes through or is dropped as a whole.
        if (frame.input && !this.mayControl()) {
          this.stats.dropped++;
          continue;
        }
        this.stats.forwarded++;
        out.push(bytes);
        this.onForwarded?.(frame.name);
      }
    } catch (err) {
      if (err instanceof RfbProtocolError) this.failure = err;
      throw err;
    }
    return out.length === 1 ? out[0]! : Buffer.concat(out);
  }

  /** Sizes the next handshake step, advancing the stage; undefined while its bytes are incomplete. */
  private handshake(): Frame | undefined {
    switch (this.stage) {
      case 'version': {
        const head = this.peek(PROTOCOL_VERSION_LENGTH);
        if (!head) return undefined;
        const text = head.toString('latin1');
        const m = PROTOCOL_VERSION_PATTERN.exec(text);
        if (!m) throw new RfbProtocolError('bad_handshake', `not an RFB ProtocolVersion: ${JSON.stringify(text)}`);
        // From 3.7 on the client picks the security type; with 3.3 (and the 3.5 some clients send,
        // which means 3.3) the server decides and the client's next byte is already ClientInit.
        const version = Number(m[1]) * 1000 + Number(m[2]);
        this.stage = version >= 3007 ? 'security' : 'init';
        return { name: 'ProtocolVersion', length: PROTOCOL_VERSION_LENGTH, input: false };
      }
      case 'security': {
        const head = this.peek(1);
        if (!head) return undefined;
        // Any other type puts bytes we cannot parse (a VncAuth response, a TLS session) before
        // ClientInit. Our Xvnc offers only None anyway (`-SecurityTypes None`, launcher.sh), so fail
        // closed rather than lose sync.
        if (head[0] !== SecurityType.None) throw new RfbProtocolError('bad_handshake', `unsupported security type ${head[0]}`);
        this.stage = 'init';
        return { name: 'SecurityType', length: 1, input: false };
      }
      case 'init': {
        if (this.size < 1) return undefined;
        // ClientInit is the shared flag. A 0 would make Xvnc disconnect every other viewer, so it is
        // always forwarded as 1. The copy keeps the caller's buffer untouched.
        this.parts[0] = Buffer.concat([Buffer.of(ClientInitFlag.Shared), this.parts[0]!.subarray(1)]);
        this.stage = 'messages';
        return { name: 'ClientInit', length: 1, input: false };
      }
      case 'messages':
        return undefined;
    }
  }

  /** Sizes the client-to-server message at the front from its header; undefined while the header is incomplete. */
  private sizeMessage(): Frame | undefined {
    const type = this.peek(1)?.[0];
    if (type === undefined) return undefined;
    let frame: Frame | undefined;
    switch (type) {
      case ClientMessage.SetPixelFormat:
        frame = { name: 'SetPixelFormat', length: Len.SetPixelFormat, input: false };
        break;
      case ClientMessage.SetEncodings: {
        const h = this.peek(Len.SetEncodingsHeader);
        frame = h && { name: 'SetEncodings', length: Len.SetEncodingsHeader + 4 * h.readUInt16BE(2), input: false };
        break;
      }
      case ClientMessage.FramebufferUpdateRequest:
        frame = { name: 'FramebufferUpdateRequest', length: Len.FramebufferUpdateRequest, input: false };
        break;
      case ClientMessage.KeyEvent:
        frame = { name: 'KeyEvent', length: Len.KeyEvent, input: true };
        break;
      case ClientMessage.PointerEvent:
        frame = { name: 'PointerEvent', length: Len.PointerEvent, input: true };
        break;
      case ClientMessage.ClientCutText: {
        const h = this.peek(Len.ClientCutTextHeader);
        if (!h) return undefined;
        // A negative length is the Extended Clipboard form; its payload is |length| bytes. Checked here,
        // at the header, so an oversized paste is refused before any of it is buffered, lease or not.
        const length = Math.abs(h.readInt32BE(4));
        if (length > this.maxClipboard) {
          throw new RfbProtocolError('clipboard_too_large', `ClientCutText of ${length} bytes exceeds ${this.maxClipboard}`);
        }
        frame = { name: 'ClientCutText', length: Len.ClientCutTextHeader + length, input: true };
        break;
      }
      case ClientMessage.EnableContinuousUpdates:
        frame = { name: 'EnableContinuousUpdates', length: Len.EnableContinuousUpdates, input: false };
        break;
      case ClientMessage.ClientFence: {
        const h = this.peek(Len.ClientFenceHeader);
        if (!h) return undefined;
        if (h[8]! > MAX_FENCE_DATA)
          throw new RfbProtocolError('unknown_message', `ClientFence with ${h[8]} data bytes (max ${MAX_FENCE_DATA})`);
        frame = { name: 'ClientFence', length: Len.ClientFenceHeader + h[8]!, input: false };
        break;
      }
      case ClientMessage.Xvp:
        // xvp asks the server to shut down / reboot / reset the machine: at least as strong as input.
        frame = { name: 'Xvp', length: Len.Xvp, input: true };
        break;
      case ClientMessage.SetDesktopSize: {
        const h = this.peek(Len.SetDesktopSizeHeader);
        frame = h && { name: 'SetDesktopSize', length: Len.SetDesktopSizeHeader + SCREEN_LENGTH * h[6]!, input: true };
        break;
      }
      case ClientMessage.Qemu:
        frame = this.sizeQemu();
        break;
      default:
        throw new RfbProtocolError('unknown_message', `unknown client message type ${type}`);
    }
    // Unreachable with the default limits (the largest SetEncodings is 262144 bytes); it bites when a
    // small clipboard limit leaves less room than an absurdly long encoding list would need.
    if (frame && frame.length > this.maxBuffered) {
      throw new RfbProtocolError('buffer_overflow', `${frame.name} of ${frame.length} bytes exceeds the ${this.maxBuffered}-byte buffer`);
    }
    return frame;
  }

  /** QEMU client message (type 255): the submessage in byte 1 decides the size. */
  private sizeQemu(): Frame | undefined {
    const h = this.peek(2);
    if (!h) return undefined;
    if (h[1] === QemuClientMessage.ExtendedKeyEvent) return { name: 'QemuExtendedKeyEvent', length: Len.QemuExtendedKeyEvent, input: true };
    if (h[1] === QemuClientMessage.Audio) {
      // Audio: 4 bytes (type, sub, u16 operation), except SetFormat, which adds 6.
      const a = this.peek(Len.QemuAudio);
      if (!a) return undefined;
      const setFormat = a.readUInt16BE(2) === QemuAudioOperation.SetFormat;
      return { name: 'QemuAudio', length: setFormat ? Len.QemuAudioSetFormat : Len.QemuAudio, input: false };
    }
    throw new RfbProtocolError('unknown_message', `unknown QEMU client submessage ${h[1]}`);
  }

  /** The first n bytes, contiguous, without consuming them; undefined if fewer are buffered. Copies at most n bytes. */
  private peek(n: number): Buffer | undefined {
    if (this.size < n) return undefined;
    while (this.parts[0]!.length < n) {
      const first = this.parts[0]!;
      const next = this.parts[1]!;
      const moved = Math.min(n - first.length, next.length);
      this.parts[0] = Buffer.concat([first, next.subarray(0, moved)]);
      if (moved === next.length) this.parts.splice(1, 1);
      else this.parts[1] = next.subarray(moved);
    }
    return this.parts[0]!.subarray(0, n);
  }

  /** Removes and returns the first n bytes (n ≤ size). */
  private take(n: number): Buffer {
    const slices: Buffer[] = [];
    let need = n;
    let i = 0;
    while (need > 0) {
      const part = this.parts[i]!;
      if (part.length <= need) {
        slices.push(part);
        need -= part.length;
        i++;
      } else {
        slices.push(part.subarray(0, need));
        this.parts[i] = part.subarray(need);
        need = 0;
      }
    }
    this.parts.splice(0, i);
    this.size -= n;
    return slices.length === 1 ? slices[0]! : Buffer.concat(slices);
  }
}
