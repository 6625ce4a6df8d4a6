import { DisposableStore, Emitter, type Event, type IDisposable } from '../../shared/lifecycle.js';
import { encodePng } from '../png-encode.js';
import { ByteReader } from './byte-reader.js';
import * as msg from './client-messages.js';
import { RfbConnectionState, type RfbState, type RfbStateChange } from './connection-state.js';
import { createDecoders } from './decoders/index.js';
import { DesktopSizeRequests } from './desktop-size.js';
import type { Decoder, Rect } from './decoders/decoder.js';
import { Framebuffer, type RectArea } from './framebuffer.js';
import { UpdateWaiters } from './update-waiters.js';
import {
  readProtocolVersion,
  readSecurityResult,
  readSecurityType33,
  readSecurityTypes,
  readServerInit,
  type RfbVersion,
} from './handshake.js';
import { ClientInitFlag, DesktopSizeStatus, Encoding, FENCE_FLAGS_SUPPORTED, FenceFlag, SecurityType } from './protocol.js';
import { readExtendedDesktopSize, readRectHeader, readServerMessage } from './server-messages.js';
import type { ByteTransport } from './transport.js';

export { transportFromStreams, type ByteTransport } from './transport.js';
export type { RfbState, RfbStateChange } from './connection-state.js';

/**
 * A small RFB 3.8 (VNC) client for talking to the sandbox's Xvnc over any byte pipe: screenshots, update
 * checks, fps/bandwidth measurements and SetDesktopSize. It decodes lossless, self-contained encodings
 * only — Raw, CopyRect and Hextile (what the live connection asks for: LIVE_ENCODINGS) — never a zlib
 * stream that spans the connection, so a recorded update decodes on its own. Spec: https://github.com/rfbproto/rfbproto
 *
 * Shaped like noVNC's `core/rfb.js`: bytes are pushed in as they arrive and parsed by an explicit state
 * machine (RfbConnectionState); each step, and each decoder, goes ahead only once its bytes are all
 * there, so a message split anywhere parses the same. "disconnected" is final.
 *
 * About 490 lines: the public API and the state machine's handlers stay together so one reads how a
 * request meets its answer; the parsing itself lives in handshake.ts, server-messages.ts and decoders/.
 */

export interface RfbUpdateStats {
  updates: number;
  rects: number;
  bytes: number;
}

const PSEUDO_ENCODINGS = [Encoding.DesktopSize, Encoding.ExtendedDesktopSize, Encoding.LastRect];
const DEFAULT_ENCODINGS = [Encoding.Raw, Encoding.CopyRect, ...PSEUDO_ENCODINGS];
/** DEFAULT_ENCODINGS (raw pixels) plus the pseudo-encodings continuous updates need. */
export const CONTINUOUS_ENCODINGS = [...DEFAULT_ENCODINGS, Encoding.ContinuousUpdates, Encoding.Fence];
/**
 * The live connection's (live-screen.ts): Hextile first, continuous updates. A full-window animation
 * of flat colours comes in about 10 KB per update instead of 3.5 MB of Raw through the exec relay,
 * the decoder and the recorder — on a 2-core machine, CPU taken from the desktop it watches — and
 * every Hextile rect still decodes on its own, which recorded updates need (screen-recorder.ts).
 */
export const LIVE_ENCODINGS = [
  Encoding.Hextile,
  Encoding.CopyRect,
  Encoding.Raw,
  ...PSEUDO_ENCODINGS,
  Encoding.ContinuousUpdates,
  Encoding.Fence,
];

const DEFAULT_TIMEOUT_MS = 10_000;

/** The FramebufferUpdate being parsed: its number, the rects still to come, and the one being decoded. */
interface UpdateInProgress {
  seq: number;
  rectsLeft: number;
  hasPixels: boolean;
  rect: Rect | undefined;
  /** The areas its pixel rects painted. */
  damage: RectArea[];
}

interface FenceWaiter {
  resolve: () => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

export class RfbClient implements IDisposable {
  private readonly reader = new ByteReader();
  private readonly machine = new RfbConnectionState();
  private readonly disposables = new DisposableStore();
  private readonly decoders: ReadonlyMap<number, Decoder> = createDecoders();
  private fb = new Framebuffer(0, 0);
  private version: RfbVersion = 8;
  private serverName = '';
  /** Why the connection ended; undefined while it is up, and after our own close(). */
  private closeError: Error | undefined;
  private processing = false;
  /** Bytes of a payload being thrown away as it arrives (colour map, oversized cut text). */
  private discardLeft = 0;
  private update: UpdateInProgress | undefined;
  /** The server sent EndOfContinuousUpdates: it can push updates without a request per frame. */
  private continuousSupported = false;
  private handshakeBytes = 0;
  private updatesStarted = 0;
  private updatesDone = 0;
  private rectCount = 0;
  private pixelsPainted = 0;
  private readonly updateWaiters = new UpdateWaiters();
  private readonly desktopSize = new DesktopSizeRequests();
  private fenceSeq = 0;
  private readonly fenceWaiters = new Map<number, FenceWaiter>();

  private readonly updateEmitter = this.disposables.add(new Emitter<void>());
  private readonly resizeEmitter = this.disposables.add(new Emitter<{ width: number; height: number }>());
  private readonly bellEmitter = this.disposables.add(new Emitter<void>());
  private readonly cutTextEmitter = this.disposables.add(new Emitter<string>());
  private readonly continuousEmitter = this.disposables.add(new Emitter<void>());
  private readonly closeEmitter = this.disposables.add(new Emitter<Error | undefined>());
  private readonly damageEmitter = this.disposables.add(new Emitter<readonly RectArea[]>());
  private readonly serverUpdateEmitter = this.disposables.add(new Emitter<readonly Buffer[]>());

  /** After each complete FramebufferUpdate. */
  readonly onUpdate: Event<void> = this.updateEmitter.event;
  /** After each complete FramebufferUpdate that carried pixels: the areas it painted (before onUpdate). */
  readonly onDamage: Event<readonly RectArea[]> = this.damageEmitter.event;
  /** The framebuffer changed size (DesktopSize or ExtendedDesktopSize). */
  readonly onResize: Event<{ width: number; height: number }> = this.resizeEmitter.event;
  readonly onBell: Event<void> = this.bellEmitter.event;
  /** ServerCutText (latin-1, as the base protocol defines it). */
  readonly onCutText: Event<string> = this.cutTextEmitter.event;
  /** The server sent EndOfContinuousUpdates. */
  readonly onContinuousUpdates: Event<void> = this.continuousEmitter.event;
  /** The connection ended: with the reason, or undefined after our own close()/dispose(). Fires once. */
  readonly onClose: Event<Error | undefined> = this.closeEmitter.event;
  readonly onDidChangeState: Event<RfbStateChange> = this.machine.onDidChange;
  /**
   * After each complete FramebufferUpdate, once applied: its wire bytes, whole (header, rects,
   * pseudo-rects such as DesktopSize), as views of the received chunks — the screen recorder's tap
   * (src/desktop/replay/). Bytes are only kept while someone listens.
   */
  readonly onServerUpdate: Event<readonly Buffer[]> = this.serverUpdateEmitter.event;

  /** Settles when the handshake ends: connected, or disconnected with the reason. */
  private readonly handshakeDone: Promise<void>;

  private constructor(
    private readonly transport: ByteTransport,
    private readonly encodings: readonly number[],
  ) {
    this.handshakeDone = new Promise((resolve, reject) => {
      const sub = this.machine.onDidChange(({ to }) => {
        if (to === 'connected') resolve();
        else if (to === 'disconnected') reject(this.closeError ?? new Error('RFB client is closed'));
        else return;
        sub.dispose();
      });
    });
    transport.onData((chunk) => this.receive(chunk));
    transport.onClose((err) => {
      if (this.machine.isFinal) return;
      const what =
        this.state === 'connected' ? 'RFB server closed the connection' : 'RFB server closed the connection during the handshake';
      this.shutdown(new Error(err ? `${what}: ${err.message}` : what));
    });
  }

  /**
   * Does the handshake: version 3.8 (accepting 3.3/3.7 servers), security type None, shared ClientInit,
   * ServerInit; then sends SetPixelFormat (32bpp true-colour, little-endian, BGRX) and SetEncodings.
   * Resolves once ServerInit is read; rejects on timeout, close or protocol error and closes the transport.
   */
  static async connect(transport: ByteTransport, opts: { timeoutMs?: number; encodings?: number[] } = {}): Promise<RfbClient> {
    const client = new RfbClient(transport, opts.encodings ?? DEFAULT_ENCODINGS);
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const timer = setTimeout(() => client.shutdown(new Error(`RFB handshake timed out after ${timeoutMs} ms`)), timeoutMs);
    try {
      await client.handshakeDone;
    } finally {
      clearTimeout(timer);
    }
    return client;
  }

  get state(): RfbState {
    return this.machine.state;
  }

  get width(): number {
    return this.fb.width;
  }

  get height(): number {
    return this.fb.height;
  }

  get name(): string {
    return this.serverName;
  }

  /** Complete FramebufferUpdates, their rects, and bytes of server messages parsed after ServerInit. */
  get stats(): RfbUpdateStats {
    return { updates: this.updatesDone, rects: this.rectCount, bytes: this.reader.consumed - this.handshakeBytes };
  }

  /**
   * Pixels painted by the updates so far (the area of every pixel rect, CopyRect included): what
   * replaying them costs, whatever their encoding made of the bytes. The recorder spaces its keyframes by it.
   */
  get paintedPixels(): number {
    return this.pixelsPainted;
  }

  /** true while a FramebufferUpdate is half parsed (the framebuffer may hold part of it). */
  get updating(): boolean {
    return this.update !== undefined;
  }

  /** RGBA copy of the current framebuffer (width*height*4). */
  framebuffer(): Uint8Array {
    return this.fb.data.slice();
  }

  /**
   * Sends FramebufferUpdateRequest for the whole screen; resolves when the next complete update carrying pixels
   * (Raw/CopyRect) has been applied. Updates holding only pseudo-rects don't count: Xvnc answers a
   * non-incremental request with a screen-layout-only update and then drops the request (VNCSConnectionST::
   * writeNoDataUpdate), so the pixels only come after the client asks again — which finishUpdate does.
   */
  requestUpdate(incremental: boolean, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<void> {
    if (this.machine.isFinal) return Promise.reject(new Error('RFB client is closed'));
    // An update already being parsed was not sent for this request, so it does not count.
    const done = this.updateWaiters.wait(this.updatesStarted, timeoutMs);
    this.sendUpdateRequest(incremental);
    return done;
  }

  /**
   * Sends a FramebufferUpdateRequest without waiting for its answer: a client that keeps one
   * incremental request outstanding (as noVNC does) gets every change as it happens.
   */
  askForUpdate(incremental: boolean): void {
    this.sendUpdateRequest(incremental);
  }

  /**
   * Resolves once the server has handled every message sent before this call: a Fence round trip
   * (the server answers fences in order, after the input before them). Needs the Fence pseudo-encoding
   * in SetEncodings (CONTINUOUS_ENCODINGS); a server that does not answer fences times out.
   */
  sync(timeoutMs = 5000): Promise<void> {
    if (this.machine.isFinal) return Promise.reject(new Error('RFB client is closed'));
    const id = ++this.fenceSeq >>> 0;
    const payload = Buffer.alloc(4);
    payload.writeUInt32BE(id);
    const done = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.fenceWaiters.delete(id);
        reject(new Error(`the RFB server did not answer a fence within ${timeoutMs} ms`));
      }, timeoutMs);
      this.fenceWaiters.set(id, { resolve, reject, timer });
    });
    this.send(msg.clientFence(FenceFlag.Request | FenceFlag.BlockBefore, payload));
    return done;
  }

  /** Full-screen screenshot as PNG: non-incremental request, wait for it, encode. */
  async screenshot(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<Buffer> {
    await this.requestUpdate(false, timeoutMs);
    return encodePng(this.fb.width, this.fb.height, this.fb.data);
  }

  pointer(x: number, y: number, buttonMask: number): void {
    this.send(msg.pointerEvent(x, y, buttonMask));
  }

  key(keysym: number, down: boolean): void {
    this.send(msg.keyEvent(keysym, down));
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
    if (!this.desktopSize.supported && this.updatesDone === 0) await this.requestUpdate(false, timeoutMs);
    if (this.machine.isFinal) throw new Error('RFB client is closed');
    if (!this.desktopSize.supported) throw new Error('RFB server has not announced ExtendedDesktopSize, so it cannot be resized');
    if (this.desktopSize.inProgress) throw new Error('an RFB resize is already in progress');
    const { message, answered } = this.desktopSize.start(width, height, timeoutMs);
    this.send(message);
    // Servers answer inside a FramebufferUpdate, so make sure one is requested; it also brings the new pixels.
    this.sendUpdateRequest(true);
    await answered;
  }

  /**
   * Asks the server to push updates as the screen changes, without a request per frame (what noVNC
   * does when the server offers it). Needs the ContinuousUpdates and Fence pseudo-encodings in
   * SetEncodings (`CONTINUOUS_ENCODINGS`); resolves once the server has confirmed it supports them.
   */
  async enableContinuousUpdates(timeoutMs = 5000): Promise<void> {
    if (!this.continuousSupported) {
      // The server announces support with an EndOfContinuousUpdates after any update request.
      let sub: IDisposable | undefined;
      let timer: NodeJS.Timeout | undefined;
      const seen = new Promise<void>((resolve, reject) => {
        timer = setTimeout(() => reject(new Error('the server did not offer continuous updates')), timeoutMs);
        sub = this.onContinuousUpdates(() => resolve());
      });
      this.sendUpdateRequest(true);
      try {
        await seen;
      } finally {
        clearTimeout(timer);
        sub?.dispose();
      }
    }
    this.send(msg.enableContinuousUpdates(this.fb.width, this.fb.height));
  }

  /** Ends the connection (same as dispose(); kept because callers speak of closing a connection). */
  close(): void {
    this.dispose();
  }

  /** Pending promises reject with "RFB client is closed", the transport closes, onClose fires with undefined. */
  dispose(): void {
    this.shutdown(undefined);
  }

  // ---- the state machine ----

  private receive(chunk: Buffer): void {
    if (this.machine.isFinal) return;
    this.reader.push(chunk);
    // A listener may cause more data to arrive while we parse; the running loop picks it up.
    if (this.processing) return;
    this.processing = true;
    try {
      while (!this.machine.isFinal && this.step()) {
        // each step consumed a whole unit (a handshake step, a message, a rect or part of one)
      }
    } catch (err) {
      this.shutdown(err as Error);
    } finally {
      this.processing = false;
    }
  }

  /** Runs the current state's handler; false when it needs more bytes. */
  private step(): boolean {
    switch (this.machine.state) {
      case 'protocol-version':
        return this.readProtocolVersion();
      case 'security':
        return this.readSecurity();
      case 'security-result':
        return this.readSecurityResult();
      case 'server-init':
        return this.readServerInit();
      case 'connected':
        return this.readMessage();
      case 'disconnected':
        return false;
    }
  }

  private readProtocolVersion(): boolean {
    const version = readProtocolVersion(this.reader);
    if (version === undefined) return false;
    this.version = version;
    this.send(msg.protocolVersion(version));
    this.machine.moveTo('security');
    return true;
  }

  private readSecurity(): boolean {
    if (this.version === 3) {
      if (!readSecurityType33(this.reader)) return false;
      this.enterServerInit();
      return true;
    }
    if (!readSecurityTypes(this.reader)) return false;
    this.send(msg.singleByte(SecurityType.None));
    // 3.7 sends no SecurityResult for None; 3.8 does, with a reason string on failure.
    if (this.version === 8) this.machine.moveTo('security-result');
    else this.enterServerInit();
    return true;
  }

  private readSecurityResult(): boolean {
    if (!readSecurityResult(this.reader)) return false;
    this.enterServerInit();
    return true;
  }

  private enterServerInit(): void {
    // Shared, so other viewers (the app's noVNC) stay connected.
    this.send(msg.singleByte(ClientInitFlag.Shared));
    this.machine.moveTo('server-init');
  }

  private readServerInit(): boolean {
    const init = readServerInit(this.reader);
    if (!init) return false;
    this.serverName = init.name;
    this.fb = new Framebuffer(init.width, init.height);
    this.send(msg.setPixelFormatBgrx());
    this.send(msg.setEncodings(this.encodings));
    this.handshakeBytes = this.reader.consumed;
    this.machine.moveTo('connected');
    return true;
  }

  // ---- connected: server messages ----

  private readMessage(): boolean {
    const r = this.reader;
    if (this.discardLeft > 0) {
      this.discardLeft -= r.discard(this.discardLeft);
      return this.discardLeft === 0;
    }
    if (this.update) return this.readUpdate(this.update);
    if (this.serverUpdateEmitter.hasListeners) r.startCapture();
    const m = readServerMessage(r);
    if (!m) return false;
    if (m.kind !== 'framebuffer-update') r.takeCapture();
    switch (m.kind) {
      case 'framebuffer-update':
        this.update = { seq: ++this.updatesStarted, rectsLeft: m.rects, hasPixels: false, rect: undefined, damage: [] };
        break;
      case 'discard':
        this.discardLeft = m.bytes;
        break;
      case 'bell':
        this.bellEmitter.fire();
        break;
      case 'cut-text':
        this.cutTextEmitter.fire(m.text);
        break;
      case 'end-of-continuous-updates': // the server supports them (or stopped sending them)
        this.continuousSupported = true;
        this.continuousEmitter.fire();
        break;
      case 'fence':
        // A fence with the request bit set must be answered (TigerVNC measures the link with them and
        // paces continuous updates by the replies).
        if (m.flags & FenceFlag.Request) this.send(msg.clientFence(m.flags & FENCE_FLAGS_SUPPORTED, m.payload));
        else if (m.payload.length === 4) this.fenceAnswered(m.payload.readUInt32BE(0));
        break;
    }
    return true;
  }

  private readUpdate(u: UpdateInProgress): boolean {
    for (;;) {
      if (!u.rect) {
        if (u.rectsLeft === 0) return this.finishUpdate(u);
        const rect = readRectHeader(this.reader);
        if (!rect) return false;
        // Servers that don't know the count up front send 0xffff rects and end with LastRect.
        if (rect.encoding === Encoding.LastRect) return this.finishUpdate(u);
        u.rectsLeft--;
        this.rectCount++;
        if (this.decoders.has(rect.encoding)) {
          u.hasPixels = true;
          this.pixelsPainted += rect.width * rect.height;
          u.damage.push({ x: rect.x, y: rect.y, width: rect.width, height: rect.height });
        }
        u.rect = rect;
      }
      if (!this.decodeRect(u.rect)) return false;
      u.rect = undefined;
    }
  }

  private decodeRect(rect: Rect): boolean {
    const decoder = this.decoders.get(rect.encoding);
    if (decoder) return decoder.decodeRect(this.reader, rect, this.fb);
    switch (rect.encoding) {
      case Encoding.DesktopSize:
        this.setSize(rect.width, rect.height);
        return true;
      case Encoding.ExtendedDesktopSize: {
        const layout = readExtendedDesktopSize(this.reader);
        if (!layout) return false;
        const [reason, status] = [rect.x, rect.y];
        if (status === DesktopSizeStatus.Ok) this.setSize(rect.width, rect.height);
        this.desktopSize.layoutReported(reason, status, layout.screen);
        return true;
      }
      default:
        throw new Error(
          `unsupported RFB encoding ${rect.encoding} in FramebufferUpdate (${rect.width}x${rect.height}+${rect.x}+${rect.y})`,
        );
    }
  }

  private finishUpdate(u: UpdateInProgress): boolean {
    this.update = undefined;
    this.updatesDone++;
    if (this.updateWaiters.updateDone(u.seq, u.hasPixels)) {
      // A pixel-less answer used up the request; ask again. Incremental is enough (the server already marked the
      // non-incremental area as changed) and can't provoke another layout-only answer, so this cannot loop.
      this.sendUpdateRequest(true);
    }
    const wire = this.reader.takeCapture();
    if (wire.length) this.serverUpdateEmitter.fire(wire);
    if (u.damage.length) this.damageEmitter.fire(u.damage);
    this.updateEmitter.fire();
    return true;
  }

  private fenceAnswered(id: number): void {
    const waiter = this.fenceWaiters.get(id);
    if (!waiter) return;
    this.fenceWaiters.delete(id);
    clearTimeout(waiter.timer);
    waiter.resolve();
  }

  private setSize(width: number, height: number): void {
    if (this.fb.resize(width, height)) this.resizeEmitter.fire({ width, height });
  }

  private sendUpdateRequest(incremental: boolean): void {
    this.send(msg.framebufferUpdateRequest(incremental, this.fb.width, this.fb.height));
  }

  private send(bytes: Buffer): void {
    if (!this.machine.isFinal) this.transport.write(bytes);
  }

  /** Ends everything once: "disconnected", pending promises reject, the transport closes, onClose fires. */
  private shutdown(err: Error | undefined): void {
    if (this.machine.isFinal) return;
    this.closeError = err;
    const reason = err ?? new Error('RFB client is closed');
    this.machine.moveTo('disconnected');
    this.reader.clear();
    this.update = undefined;
    this.updateWaiters.rejectAll(reason);
    this.desktopSize.cancel(reason);
    for (const waiter of this.fenceWaiters.values()) {
      clearTimeout(waiter.timer);
      waiter.reject(reason);
    }
    this.fenceWaiters.clear();
    this.transport.close();
    this.closeEmitter.fire(err);
    this.disposables.dispose();
    this.machine.dispose();
  }
}
