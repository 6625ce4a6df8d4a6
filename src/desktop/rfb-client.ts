import { EventEmitter } from 'node:events';
import { encodePng } from './png-encode.js';

/**
 * A small RFB 3.8 (VNC) client for talking to the sandbox's Xvnc over any byte pipe: screenshots, update
 * checks, fps/bandwidth measurements and SetDesktopSize. It asks for uncompressed pixels only (Raw + CopyRect),
 * which is all a local pipe needs and keeps the decoder tiny. Spec: https://github.com/rfbproto/rfbproto
 */

/** A duplex byte pipe: a child process's stdio, a socket, or a WebSocket adapted by the caller. */
export interface ByteTransport {
  write(chunk: Buffer): void;
  onData(listener: (chunk: Buffer) => void): void;
  onClose(listener: (err?: Error) => void): void;
  close(): void;
}

/** Adapts a readable/writable pair (e.g. `docker exec -i … socat` stdout/stdin) to a ByteTransport. */
export function transportFromStreams(
  readable: NodeJS.ReadableStream,
  writable: NodeJS.WritableStream,
  close: () => void,
): ByteTransport {
  const closeListeners: ((err?: Error) => void)[] = [];
  let closed = false;
  let closeError: Error | undefined;
  const fireClose = (err?: Error): void => {
    if (closed) return;
    closed = true;
    closeError = err;
    for (const listener of closeListeners) listener(err);
  };
  readable.on('end', () => fireClose());
  readable.on('close', () => fireClose());
  readable.on('error', (err: Error) => fireClose(err));
  // Writing to a pipe whose reader has exited raises EPIPE as an 'error' event; unhandled, it would crash.
  writable.on('error', (err: Error) => fireClose(err));
  return {
    write: (chunk) => {
      if (!closed) writable.write(chunk);
    },
    onData: (listener) => {
      readable.on('data', (chunk: Buffer | string) => listener(typeof chunk === 'string' ? Buffer.from(chunk, 'latin1') : chunk));
    },
    onClose: (listener) => {
      if (closed) queueMicrotask(() => listener(closeError));
      else closeListeners.push(listener);
    },
    close,
  };
}

export interface RfbUpdateStats {
  updates: number;
  rects: number;
  bytes: number;
}

const ENCODING = {
  raw: 0,
  copyRect: 1,
  desktopSize: -223,
  lastRect: -224,
  extendedDesktopSize: -308,
} as const;

const DEFAULT_ENCODINGS = [ENCODING.raw, ENCODING.copyRect, ENCODING.desktopSize, ENCODING.extendedDesktopSize, ENCODING.lastRect];
/** DEFAULT_ENCODINGS plus the pseudo-encodings continuous updates need (ContinuousUpdates, Fence). */
export const CONTINUOUS_ENCODINGS = [...DEFAULT_ENCODINGS, -313, -312];
/** Fence flags: BlockBefore, BlockAfter, SyncNext — and the Request bit, which a reply clears. */
const FENCE_FLAGS_SUPPORTED = 0b111;
const FENCE_REQUEST = 0x80000000;

/** ExtendedDesktopSize status codes (carried in the rect's y field). */
const RESIZE_STATUS: Record<number, string> = {
  1: 'resize is administratively prohibited',
  2: 'out of resources',
  3: 'invalid screen layout',
};
/** ExtendedDesktopSize reason (x field) meaning "this is the answer to your SetDesktopSize". */
const REASON_THIS_CLIENT = 1;

const DEFAULT_TIMEOUT_MS = 10_000;
const MAX_STRING = 1 << 20; // server name, failure reasons and cut text larger than this are not kept

/**
 * Incoming bytes, consumed by `await read(n)`. The parser is written as straight-line async code, so messages
 * split across arbitrary chunk boundaries need no explicit state machine. Only one read is pending at a time.
 */
class ByteReader {
  /** Bytes handed to the parser so far (the stats count these). */
  consumed = 0;
  private chunks: Buffer[] = [];
  private head = 0; // offset of the first unread byte in chunks[0]
  private available = 0;
  private waiter: { n: number; resolve: () => void; reject: (err: Error) => void } | undefined;
  private eof: Error | undefined;

  push(chunk: Buffer): void {
    if (this.eof || chunk.length === 0) return;
    this.chunks.push(chunk);
    this.available += chunk.length;
    if (this.waiter && this.available >= this.waiter.n) {
      const { resolve } = this.waiter;
      this.waiter = undefined;
      resolve();
    }
  }

  /** The peer is gone: buffered bytes may still be read (a failure reason, say), then reads reject with err. */
  end(err: Error): void {
    this.eof ??= err;
    if (this.waiter) {
      const { reject } = this.waiter;
      this.waiter = undefined;
      reject(this.eof);
    }
  }

  /** We are giving up: drop whatever is buffered and reject reads now. */
  fail(err: Error): void {
    this.chunks = [];
    this.head = 0;
    this.available = 0;
    this.end(err);
  }

  async read(n: number): Promise<Buffer> {
    await this.wait(n);
    return this.take(n, true);
  }

  /** Discards n bytes as they arrive, without buffering them all. */
  async skip(n: number): Promise<void> {
    while (n > 0) {
      await this.wait(1);
      const k = Math.min(n, this.available);
      this.take(k, false);
      n -= k;
    }
  }

  private wait(n: number): Promise<void> | void {
    if (this.available >= n) return;
    if (this.eof) return Promise.reject(this.eof);
    return new Promise((resolve, reject) => {
      this.waiter = { n, resolve, reject };
    });
  }

  private take(n: number, keep: boolean): Buffer {
    this.available -= n;
    this.consumed += n;
    const first = this.chunks[0];
    if (first && first.length - this.head >= n) {
      // Common case: no copy, just a view into the chunk.
      const out = first.subarray(this.head, this.head + n);
      this.advance(n);
      return out;
    }
    const out = keep ? Buffer.allocUnsafe(n) : Buffer.alloc(0);
    for (let filled = 0; filled < n; ) {
      const c = this.chunks[0]!;
      const k = Math.min(n - filled, c.length - this.head);
      if (keep) c.copy(out, filled, this.head, this.head + k);
      filled += k;
      this.advance(k);
    }
    return out;
  }

  private advance(k: number): void {
    this.head += k;
    if (this.head === this.chunks[0]!.length) {
      this.chunks.shift();
      this.head = 0;
    }
  }
}

interface UpdateWaiter {
  /** Resolve at the end of the first pixel-carrying update whose sequence number is greater than this. */
  afterSeq: number;
  resolve: () => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

interface ResizeWaiter {
  width: number;
  height: number;
  resolve: () => void;
  reject: (err: Error) => void;
}

/**
 * Events: 'update' (after each complete FramebufferUpdate), 'resize' ({ width, height }), 'bell',
 * 'cuttext' (string), 'close' (Error | undefined — undefined only after our own close()).
 */
export class RfbClient extends EventEmitter {
  private readonly reader = new ByteReader();
  private fb: Uint8Array = new Uint8Array(0);
  private fbWidth = 0;
  private fbHeight = 0;
  private serverName = '';
  private ready = false;
  private closed = false;
  /** The server sent EndOfContinuousUpdates: it can push updates without a request per frame. */
  private continuousSupported = false;
  private handshakeBytes = 0;
  private updatesStarted = 0;
  private updatesDone = 0;
  private rectCount = 0;
  private updateWaiters: UpdateWaiter[] = [];
  private pendingResize: ResizeWaiter | undefined;
  /** SetDesktopSize requests whose reason-1 answer hasn't arrived; answers come in request order. */
  private resizeRepliesOwed = 0;
  /** Set once the server has sent an ExtendedDesktopSize rect: only then may we send SetDesktopSize. */
  private canSetDesktopSize = false;
  /** The server's first screen, echoed back in SetDesktopSize: the spec asks clients to keep existing screen ids. */
  private screen = { id: 0, flags: 0 };

  private constructor(private readonly transport: ByteTransport) {
    super();
    transport.onData((chunk) => this.reader.push(chunk));
    transport.onClose((err) => {
      const what = this.ready ? 'RFB server closed the connection' : 'RFB server closed the connection during the handshake';
      this.reader.end(new Error(err ? `${what}: ${err.message}` : what));
    });
  }

  /**
   * Does the handshake: version 3.8 (accepting 3.3/3.7 servers), security type None, shared ClientInit,
   * ServerInit; then sends SetPixelFormat (32bpp true-colour, little-endian, BGRX) and SetEncodings.
   * Resolves once ServerInit is read; rejects on timeout, close or protocol error and closes the transport.
   */
  static async connect(transport: ByteTransport, opts: { timeoutMs?: number; encodings?: number[] } = {}): Promise<RfbClient> {
    const client = new RfbClient(transport);
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`RFB handshake timed out after ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([client.handshake(opts.encodings ?? DEFAULT_ENCODINGS), timeout]);
    } catch (err) {
      client.shutdown(err as Error);
      throw err;
    } finally {
      clearTimeout(timer);
    }
    void client.messageLoop();
    return client;
  }

  get width(): number {
    return this.fbWidth;
  }

  get height(): number {
    return this.fbHeight;
  }

  get name(): string {
    return this.serverName;
  }

  /** Complete FramebufferUpdates, their rects, and bytes of server messages parsed after ServerInit. */
  get stats(): RfbUpdateStats {
    return { updates: this.updatesDone, rects: this.rectCount, bytes: this.reader.consumed - this.handshakeBytes };
  }

  /** RGBA copy of the current framebuffer (width*height*4). */
  framebuffer(): Uint8Array {
    return this.fb.slice();
  }

  /**
   * Sends FramebufferUpdateRequest for the whole screen; resolves when the next complete update carrying pixels
   * (Raw/CopyRect) has been applied. Updates holding only pseudo-rects don't count: Xvnc answers a
   * non-incremental request with a screen-layout-only update and then drops the request (VNCSConnectionST::
   * writeNoDataUpdate), so the pixels only come after the client asks again — which readFramebufferUpdate does.
   */
  requestUpdate(incremental: boolean, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<void> {
    if (this.closed) return Promise.reject(new Error('RFB client is closed'));
    const done = new Promise<void>((resolve, reject) => {
      const waiter: UpdateWaiter = {
        // An update already being parsed was not sent for this request, so it does not count.
        afterSeq: this.updatesStarted,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.updateWaiters = this.updateWaiters.filter((w) => w !== waiter);
          reject(new Error(`no FramebufferUpdate from the RFB server within ${timeoutMs} ms`));
        }, timeoutMs),
      };
      this.updateWaiters.push(waiter);
    });
    this.sendUpdateRequest(incremental);
    return done;
  }

  /** Full-screen screenshot as PNG: non-incremental request, wait for it, encode. */
  async screenshot(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<Buffer> {
    await this.requestUpdate(false, timeoutMs);
    return encodePng(this.fbWidth, this.fbHeight, this.fb);
  }

  pointer(x: number, y: number, buttonMask: number): void {
    const msg = Buffer.alloc(6);
    msg[0] = 5;
    msg[1] = buttonMask & 0xff;
    msg.writeUInt16BE(clampU16(x), 2);
    msg.writeUInt16BE(clampU16(y), 4);
    this.send(msg);
  }

  key(keysym: number, down: boolean): void {
    const msg = Buffer.alloc(8);
    msg[0] = 4;
    msg[1] = down ? 1 : 0;
    msg.writeUInt32BE(keysym >>> 0, 4);
    this.send(msg);
  }

  /**
   * SetDesktopSize with a single screen at 0,0. Resolves when the server answers this request with the new size
   * (ExtendedDesktopSize, reason "this client", status 0), rejects with the server's reason if it refuses, or on
   * timeout. The server must have announced ExtendedDesktopSize; if no update has arrived yet, a full update is
   * requested first to find out (TigerVNC announces it with every full update).
   */
  async resize(width: number, height: number, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<void> {
    if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width > 0xffff || height > 0xffff) {
      throw new RangeError(`invalid desktop size ${width}x${height}`);
    }
    if (!this.canSetDesktopSize && this.updatesDone === 0) await this.requestUpdate(false, timeoutMs);
    if (this.closed) throw new Error('RFB client is closed');
    if (!this.canSetDesktopSize) throw new Error('RFB server has not announced ExtendedDesktopSize, so it cannot be resized');
    if (this.pendingResize) throw new Error('an RFB resize is already in progress');

    const msg = Buffer.alloc(8 + 16);
    msg[0] = 251;
    msg.writeUInt16BE(width, 2);
    msg.writeUInt16BE(height, 4);
    msg[6] = 1; // number of screens
    msg.writeUInt32BE(this.screen.id, 8);
    msg.writeUInt16BE(0, 12); // x
    msg.writeUInt16BE(0, 14); // y
    msg.writeUInt16BE(width, 16);
    msg.writeUInt16BE(height, 18);
    msg.writeUInt32BE(this.screen.flags, 20);

    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pendingResize = undefined;
        reject(new Error(`RFB server did not confirm the resize to ${width}x${height} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pendingResize = {
        width,
        height,
        resolve: () => (clearTimeout(timer), resolve()),
        reject: (err) => (clearTimeout(timer), reject(err)),
      };
      this.resizeRepliesOwed++;
      this.send(msg);
      // Servers answer inside a FramebufferUpdate, so make sure one is requested; it also brings the new pixels.
      this.sendUpdateRequest(true);
    });
  }

  close(): void {
    this.shutdown(undefined);
  }

  // ---- handshake ----

  private async handshake(encodings: number[]): Promise<void> {
    const r = this.reader;
    const banner = (await r.read(12)).toString('latin1');
    const m = /^RFB (\d{3})\.(\d{3})\n$/.exec(banner);
    if (!m) throw new Error(`not an RFB server: got ${JSON.stringify(banner)}`);
    const major = Number(m[1]);
    const minor = Number(m[2]);
    if (major !== 3 || minor < 3) throw new Error(`unsupported RFB protocol version ${major}.${minor}`);
    // Anything newer than 3.8 (e.g. Apple's 3.889) is answered with 3.8; 3.4-3.6 must be treated as 3.3.
    const version = minor >= 8 ? 8 : minor === 7 ? 7 : 3;
    this.send(Buffer.from(`RFB 003.00${version}\n`, 'latin1'));

    if (version === 3) {
      // 3.3: the server decides the security type.
      const type = (await r.read(4)).readUInt32BE(0);
      if (type === 0) throw new Error(`RFB server refused the connection: ${await this.readReason()}`);
      if (type !== 1) throw new Error(`RFB server requires security type ${type}; only None (1) is supported`);
    } else {
      const count = (await r.read(1))[0]!;
      if (count === 0) throw new Error(`RFB server refused the connection: ${await this.readReason()}`);
      const types = [...(await r.read(count))];
      if (!types.includes(1)) throw new Error(`RFB server offers security types [${types.join(', ')}] but not None (1)`);
      this.send(Buffer.from([1]));
      // 3.7 sends no SecurityResult for None; 3.8 does, with a reason string on failure.
      if (version === 8) {
        const result = (await r.read(4)).readUInt32BE(0);
        if (result !== 0) throw new Error(`RFB security handshake failed: ${await this.readReason()}`);
      }
    }

    this.send(Buffer.from([1])); // ClientInit: shared, so other viewers (the app's noVNC) stay connected
    const init = await r.read(24);
    const width = init.readUInt16BE(0);
    const height = init.readUInt16BE(2);
    const nameLength = init.readUInt32BE(20);
    if (nameLength > MAX_STRING) throw new Error(`RFB ServerInit name length ${nameLength} is implausible`);
    this.serverName = (await r.read(nameLength)).toString('utf8');
    this.fbWidth = width;
    this.fbHeight = height;
    this.fb = blankFramebuffer(width, height);

    // The server converts to whatever format we ask for, so the decoder only ever sees 32bpp little-endian BGRX.
    const pf = Buffer.alloc(20);
    pf[0] = 0; // SetPixelFormat
    pf[4] = 32; // bits per pixel
    pf[5] = 24; // depth
    pf[6] = 0; // little-endian
    pf[7] = 1; // true colour
    pf.writeUInt16BE(255, 8);
    pf.writeUInt16BE(255, 10);
    pf.writeUInt16BE(255, 12);
    pf[14] = 16; // red shift
    pf[15] = 8; // green shift
    pf[16] = 0; // blue shift
    this.send(pf);

    const enc = Buffer.alloc(4 + 4 * encodings.length);
    enc[0] = 2; // SetEncodings
    enc.writeUInt16BE(encodings.length, 2);
    encodings.forEach((e, i) => enc.writeInt32BE(e, 4 + 4 * i));
    this.send(enc);

    this.handshakeBytes = r.consumed;
    this.ready = true;
  }

  private async readReason(): Promise<string> {
    const length = (await this.reader.read(4)).readUInt32BE(0);
    const text = (await this.reader.read(Math.min(length, MAX_STRING))).toString('utf8');
    return text || '(no reason given)';
  }

  // ---- normal protocol ----

  private async messageLoop(): Promise<void> {
    try {
      while (!this.closed) await this.readMessage();
    } catch (err) {
      this.shutdown(err as Error);
    }
  }

  private async readMessage(): Promise<void> {
    const r = this.reader;
    const type = (await r.read(1))[0]!;
    switch (type) {
      case 0:
        return this.readFramebufferUpdate();
      case 1: {
        // SetColourMapEntries: only sent for colour-mapped formats, which we never ask for; skip it properly.
        const header = await r.read(5);
        return r.skip(6 * header.readUInt16BE(3));
      }
      case 2:
        this.emit('bell');
        return;
      case 3: {
        const header = await r.read(7);
        const length = header.readInt32BE(3);
        // A negative length is the Extended Clipboard pseudo-encoding's framing: |length| bytes of binary payload.
        if (length < 0) return r.skip(-length);
        if (length > MAX_STRING) return r.skip(length);
        this.emit('cuttext', (await r.read(length)).toString('latin1'));
        return;
      }
      case 150: // EndOfContinuousUpdates: the server supports them (or stopped sending them)
        this.continuousSupported = true;
        this.emit('continuous');
        return;
      case 248: {
        // ServerFence: 3 padding, u32 flags, u8 length, payload. A fence with the request bit set must
        // be answered (TigerVNC measures the link with them and paces continuous updates by the replies).
        const header = await r.read(8);
        const flags = header.readUInt32BE(3);
        const payload = await r.read(header[7]!);
        if (flags & FENCE_REQUEST) {
          const reply = Buffer.alloc(9 + payload.length);
          reply[0] = 248;
          reply.writeUInt32BE(flags & FENCE_FLAGS_SUPPORTED, 4);
          reply[8] = payload.length;
          payload.copy(reply, 9);
          this.send(reply);
        }
        return;
      }
      default:
        throw new Error(`unknown RFB server message type ${type}`);
    }
  }

  private async readFramebufferUpdate(): Promise<void> {
    const r = this.reader;
    const seq = ++this.updatesStarted;
    let hasPixels = false;
    const count = (await r.read(3)).readUInt16BE(1);
    for (let i = 0; i < count; i++) {
      const h = await r.read(12);
      const x = h.readUInt16BE(0);
      const y = h.readUInt16BE(2);
      const w = h.readUInt16BE(4);
      const ht = h.readUInt16BE(6);
      const encoding = h.readInt32BE(8);
      if (encoding === ENCODING.lastRect) break; // servers that don't know the count up front send 0xffff rects
      this.rectCount++;
      if (encoding === ENCODING.raw || encoding === ENCODING.copyRect) hasPixels = true;
      await this.readRect(x, y, w, ht, encoding);
    }
    this.updatesDone++;
    const due = (w: UpdateWaiter): boolean => seq > w.afterSeq;
    if (hasPixels) {
      for (const waiter of this.updateWaiters.filter(due)) {
        clearTimeout(waiter.timer);
        waiter.resolve();
      }
      this.updateWaiters = this.updateWaiters.filter((w) => !due(w));
    } else if (this.updateWaiters.some(due)) {
      // A pixel-less answer used up the request; ask again. Incremental is enough (the server already marked the
      // non-incremental area as changed) and can't provoke another layout-only answer, so this cannot loop.
      this.sendUpdateRequest(true);
    }
    this.emit('update');
  }

  private async readRect(x: number, y: number, w: number, h: number, encoding: number): Promise<void> {
    const r = this.reader;
    switch (encoding) {
      case ENCODING.raw: {
        this.checkBounds('Raw', x, y, w, h);
        if (w === 0 || h === 0) return;
        // Read a few rows at a time so a full-screen rect never has to sit in the incoming buffer whole.
        const rowBytes = w * 4;
        const rowsPerRead = Math.max(1, Math.floor(65536 / rowBytes));
        for (let row = 0; row < h; ) {
          const rows = Math.min(rowsPerRead, h - row);
          const data = await r.read(rows * rowBytes);
          for (let i = 0; i < rows; i++) this.putRow(x, y + row + i, w, data, i * rowBytes);
          row += rows;
        }
        return;
      }
      case ENCODING.copyRect: {
        const src = await r.read(4);
        const srcX = src.readUInt16BE(0);
        const srcY = src.readUInt16BE(2);
        this.checkBounds('CopyRect source', srcX, srcY, w, h);
        this.checkBounds('CopyRect', x, y, w, h);
        this.copyRect(srcX, srcY, x, y, w, h);
        return;
      }
      case ENCODING.desktopSize:
        this.setSize(w, h);
        return;
      case ENCODING.extendedDesktopSize: {
        const screenCount = (await r.read(4))[0]!;
        const screens = await r.read(16 * screenCount);
        this.canSetDesktopSize = true;
        if (screenCount > 0) this.screen = { id: screens.readUInt32BE(0), flags: screens.readUInt32BE(12) };
        const reason = x;
        const status = y;
        if (status === 0) this.setSize(w, h);
        // Only the answer to our latest request settles resize(). Xvnc first sends reason-0 rects for the
        // intermediate RandR steps, and a late answer to an earlier, timed-out request must not count either.
        if (reason !== REASON_THIS_CLIENT || this.resizeRepliesOwed === 0) return;
        this.resizeRepliesOwed--;
        if (this.resizeRepliesOwed > 0 || !this.pendingResize) return;
        const { width, height } = this.pendingResize;
        this.settleResize(
          status === 0
            ? undefined
            : new Error(`RFB server refused the resize to ${width}x${height}: ${RESIZE_STATUS[status] ?? 'unknown error'} (status ${status})`),
        );
        return;
      }
      default:
        throw new Error(`unsupported RFB encoding ${encoding} in FramebufferUpdate (${w}x${h}+${x}+${y})`);
    }
  }

  /** Converts one row of BGRX pixels (our SetPixelFormat) into the RGBA framebuffer. */
  private putRow(x: number, y: number, w: number, data: Buffer, offset: number): void {
    const fb = this.fb;
    let o = (y * this.fbWidth + x) * 4;
    for (let p = offset, end = offset + w * 4; p < end; p += 4, o += 4) {
      fb[o] = data[p + 2]!;
      fb[o + 1] = data[p + 1]!;
      fb[o + 2] = data[p]!;
      fb[o + 3] = 255;
    }
  }

  private copyRect(srcX: number, srcY: number, dstX: number, dstY: number, w: number, h: number): void {
    const stride = this.fbWidth * 4;
    const copyRow = (i: number): void => {
      const from = (srcY + i) * stride + srcX * 4;
      this.fb.copyWithin((dstY + i) * stride + dstX * 4, from, from + w * 4);
    };
    // Source and destination may overlap: when moving down, copy bottom rows first so no source row is
    // overwritten before it is read (copyWithin already handles overlap within a row).
    if (dstY > srcY) for (let i = h - 1; i >= 0; i--) copyRow(i);
    else for (let i = 0; i < h; i++) copyRow(i);
  }

  private checkBounds(what: string, x: number, y: number, w: number, h: number): void {
    if (x + w > this.fbWidth || y + h > this.fbHeight) {
      throw new Error(`RFB ${what} rect ${w}x${h}+${x}+${y} lies outside the ${this.fbWidth}x${this.fbHeight} framebuffer`);
    }
  }

  /** New framebuffer size; the overlapping top-left part is kept until the server repaints. */
  private setSize(width: number, height: number): void {
    if (width === this.fbWidth && height === this.fbHeight) return;
    const next = blankFramebuffer(width, height);
    const rowBytes = Math.min(width, this.fbWidth) * 4;
    for (let y = 0; y < Math.min(height, this.fbHeight); y++) {
      next.set(this.fb.subarray(y * this.fbWidth * 4, y * this.fbWidth * 4 + rowBytes), y * width * 4);
    }
    this.fb = next;
    this.fbWidth = width;
    this.fbHeight = height;
    this.emit('resize', { width, height });
  }

  private settleResize(err?: Error): void {
    const pending = this.pendingResize;
    this.pendingResize = undefined;
    if (err) pending?.reject(err);
    else pending?.resolve();
  }

  /**
   * Asks the server to push updates as the screen changes, without a request per frame (what noVNC
   * does when the server offers it). Needs the ContinuousUpdates and Fence pseudo-encodings in
   * SetEncodings (`CONTINUOUS_ENCODINGS`); resolves once the server has confirmed it supports them.
   */
  async enableContinuousUpdates(timeoutMs = 5000): Promise<void> {
    if (!this.continuousSupported) {
      // The server announces support with an EndOfContinuousUpdates after any update request.
      const seen = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('the server did not offer continuous updates')), timeoutMs);
        this.once('continuous', () => {
          clearTimeout(timer);
          resolve();
        });
      });
      this.sendUpdateRequest(true);
      await seen;
    }
    const msg = Buffer.alloc(10);
    msg[0] = 150;
    msg[1] = 1;
    msg.writeUInt16BE(this.fbWidth, 6);
    msg.writeUInt16BE(this.fbHeight, 8);
    this.send(msg);
  }

  private sendUpdateRequest(incremental: boolean): void {
    const msg = Buffer.alloc(10);
    msg[0] = 3;
    msg[1] = incremental ? 1 : 0;
    msg.writeUInt16BE(this.fbWidth, 6);
    msg.writeUInt16BE(this.fbHeight, 8);
    this.send(msg);
  }

  private send(msg: Buffer): void {
    if (!this.closed) this.transport.write(msg);
  }

  /** Ends everything once: pending promises reject, the transport closes, 'close' is emitted. */
  private shutdown(err: Error | undefined): void {
    if (this.closed) return;
    this.closed = true;
    const reason = err ?? new Error('RFB client is closed');
    this.reader.fail(reason);
    for (const waiter of this.updateWaiters) {
      clearTimeout(waiter.timer);
      waiter.reject(reason);
    }
    this.updateWaiters = [];
    this.settleResize(reason);
    this.transport.close();
    this.emit('close', err);
  }
}

function blankFramebuffer(width: number, height: number): Uint8Array {
  // Opaque black rather than transparent, so a screenshot taken before any update still looks like a screen.
  const fb = new Uint8Array(width * height * 4);
  for (let i = 3; i < fb.length; i += 4) fb[i] = 255;
  return fb;
}

function clampU16(v: number): number {
  return Math.max(0, Math.min(0xffff, Math.round(v)));
}
