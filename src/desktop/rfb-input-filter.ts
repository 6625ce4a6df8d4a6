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
}

const DEFAULT_MAX_CLIPBOARD = 256 * 1024;
/** Headroom above the clipboard limit for every other message (the next largest is a SetEncodings). */
const BUFFER_HEADROOM = 64 * 1024;
/** RFC 6143 §7.7.5: a fence carries at most 64 bytes of data. */
const MAX_FENCE_DATA = 64;
/** Security type None. Xvnc runs with `-SecurityTypes None` (launcher.sh); see `handshake()`. */
const SECURITY_NONE = 1;

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
        const head = this.peek(12);
        if (!head) return undefined;
        const text = head.toString('latin1');
        const m = /^RFB (\d{3})\.(\d{3})\n$/.exec(text);
        if (!m) throw new RfbProtocolError('bad_handshake', `not an RFB ProtocolVersion: ${JSON.stringify(text)}`);
        // From 3.7 on the client picks the security type; with 3.3 (and the 3.5 some clients send,
        // which means 3.3) the server decides and the client's next byte is already ClientInit.
        const version = Number(m[1]) * 1000 + Number(m[2]);
        this.stage = version >= 3007 ? 'security' : 'init';
        return { name: 'ProtocolVersion', length: 12, input: false };
      }
      case 'security': {
        const head = this.peek(1);
        if (!head) return undefined;
        // Any other type puts bytes we cannot parse (a VncAuth response, a TLS session) before
        // ClientInit. Our Xvnc offers only None anyway, so fail closed rather than lose sync.
        if (head[0] !== SECURITY_NONE) throw new RfbProtocolError('bad_handshake', `unsupported security type ${head[0]}`);
        this.stage = 'init';
        return { name: 'SecurityType', length: 1, input: false };
      }
      case 'init': {
        if (this.size < 1) return undefined;
        // ClientInit is the shared flag. A 0 would make Xvnc disconnect every other viewer, so it is
        // always forwarded as 1. The copy keeps the caller's buffer untouched.
        this.parts[0] = Buffer.concat([Buffer.of(1), this.parts[0]!.subarray(1)]);
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
      case 0:
        frame = { name: 'SetPixelFormat', length: 20, input: false };
        break;
      case 2: {
        const h = this.peek(4);
        frame = h && { name: 'SetEncodings', length: 4 + 4 * h.readUInt16BE(2), input: false };
        break;
      }
      case 3:
        frame = { name: 'FramebufferUpdateRequest', length: 10, input: false };
        break;
      case 4:
        frame = { name: 'KeyEvent', length: 8, input: true };
        break;
      case 5:
        frame = { name: 'PointerEvent', length: 6, input: true };
        break;
      case 6: {
        const h = this.peek(8);
        if (!h) return undefined;
        // A negative length is the Extended Clipboard form; its payload is |length| bytes. Checked here,
        // at the header, so an oversized paste is refused before any of it is buffered, lease or not.
        const length = Math.abs(h.readInt32BE(4));
        if (length > this.maxClipboard) {
          throw new RfbProtocolError('clipboard_too_large', `ClientCutText of ${length} bytes exceeds ${this.maxClipboard}`);
        }
        frame = { name: 'ClientCutText', length: 8 + length, input: true };
        break;
      }
      case 150:
        frame = { name: 'EnableContinuousUpdates', length: 10, input: false };
        break;
      case 248: {
        const h = this.peek(9);
        if (!h) return undefined;
        if (h[8]! > MAX_FENCE_DATA) throw new RfbProtocolError('unknown_message', `ClientFence with ${h[8]} data bytes (max ${MAX_FENCE_DATA})`);
        frame = { name: 'ClientFence', length: 9 + h[8]!, input: false };
        break;
      }
      case 250:
        // xvp asks the server to shut down / reboot / reset the machine: at least as strong as input.
        frame = { name: 'Xvp', length: 4, input: true };
        break;
      case 251: {
        const h = this.peek(8);
        frame = h && { name: 'SetDesktopSize', length: 8 + 16 * h[6]!, input: true };
        break;
      }
      case 255:
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
    if (h[1] === 0) return { name: 'QemuExtendedKeyEvent', length: 12, input: true };
    if (h[1] === 1) {
      // Audio: 4 bytes (type, sub, u16 operation), except operation 2 (set format) which adds 6.
      const a = this.peek(4);
      return a && { name: 'QemuAudio', length: a.readUInt16BE(2) === 2 ? 10 : 4, input: false };
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
