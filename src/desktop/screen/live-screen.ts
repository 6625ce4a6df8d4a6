// Over 400 lines: one live connection's whole life — connect and reconnect, frames and their ids,
// actions with the measured pointer, waits — kept together because they share its state. Geometry,
// encoding, keysyms and the pointer probe are modules of their own beside it.
import { randomBytes } from 'node:crypto';
import { SandboxDeskError } from '../../shared/errors.js';
import { DisposableStore, Emitter, type Event, type IDisposable } from '../../shared/lifecycle.js';
import type { RectArea } from '../rfb/framebuffer.js';
import { LIVE_ENCODINGS, RfbClient, type ByteTransport } from '../rfb/rfb-client.js';
import { encodeFrame, type FrameFormat } from './frame-encode.js';
import { checkPoint, fitFrame, frameToScreen, scaleRgba, screenToFrame, type FrameGeometry } from './frame-geometry.js';
import { keysymsForText, planKeys } from './keysyms.js';
import { InputChannel } from './input-channel.js';

/**
 * The core's own live RFB connection to one running desktop: updates stream into a framebuffer,
 * so a screenshot encodes what is already here (no connection, no exec) and input goes out as RFB
 * PointerEvents/KeyEvents on the same socket. Every screenshot is a frame with an id; an action may
 * name the frame whose coordinates it uses, and a frame from before a resize or a reconnect (an Xvnc
 * or desktop restart) is refused as stale_frame. The connection comes back on the next call after
 * it drops; the first frame after that says so (firstSinceChange).
 */

/** How long a refusal waits for a size change the X server reported to reach this connection. */
const SETTLE_MS = 1500;

export interface Frame extends FrameGeometry {
  frameId: string;
  /** frame width / screen width: 1 unless a maximum size was asked for. */
  scale: number;
  takenAt: string;
  format: FrameFormat;
  /** The first frame since the screen changed size or the connection was (re)made: earlier frames are stale. */
  firstSinceChange: boolean;
}

export interface ScreenshotOptions {
  maxWidth?: number;
  maxHeight?: number;
  format?: FrameFormat;
  /** JPEG/WebP quality 1–100. */
  quality?: number;
}

export type Button = 1 | 2 | 3;
export type ScreenAction =
  | { kind: 'move'; x: number; y: number }
  | { kind: 'click'; x: number; y: number; button?: Button; double?: boolean }
  | { kind: 'drag'; x: number; y: number; toX: number; toY: number; button?: Button }
  | { kind: 'scroll'; x: number; y: number; direction: 'up' | 'down' | 'left' | 'right'; amount?: number }
  | { kind: 'type'; text: string }
  | { kind: 'key'; keys: string };

export interface ActionResult {
  /** Where the X pointer is after the action, measured (screen coordinates). */
  pointer: { x: number; y: number };
  /** The same, in the coordinates of the frame the action named. */
  pointerInFrame?: { x: number; y: number };
  frameId?: string;
  /** What carried the input: the live RFB connection, or xdotool for keys outside RFB's keysym table. */
  via: 'rfb' | 'xdotool';
  /** Why the input did not go over RFB, when it did not. */
  note?: string;
  /** The screen point the action aimed at (after mapping from the frame), for viewers to show. */
  target?: { x: number; y: number };
}

/** What a (re)connection needs: the RFB byte pipe and a way to read the X pointer on that desktop. */
export interface LiveLink extends IDisposable {
  transport: ByteTransport;
  /**
   * What names this run of the desktop to every process (8 hex: the sandbox incarnation and the
   * desktop's launcher pid, hashed). Frame ids carry it, so a frame taken by one process (a CLI
   * screenshot) can be used by another (a CLI click) and is stale after a restart.
   */
  desktopId: string;
  measurePointer(): Promise<{ x: number; y: number }>;
  /**
   * The screen's geometry generation as the X server tells it now (RandR's timestamps), read by any
   * process alike: a resize there and back between two CLI calls changes it though the size is the
   * same again. undefined where it cannot be read (no libXrandr in the sandbox).
   */
  generation?(): Promise<string | undefined>;
  /** Presses key combinations with `xdotool key` (keysyms RFB's table lacks); refuses names X does not know. */
  xdotoolKeys?(combos: string[]): Promise<void>;
  /**
   * A second byte pipe to the same Xvnc, for input only (input-channel.ts): its fences wait for no
   * pixels. Without it, input and its fences go over the live connection.
   */
  openInput?(): ByteTransport | Promise<ByteTransport>;
}

interface FrameRecord extends FrameGeometry {
  epoch: number;
  /** The X server's geometry generation when the frame was taken (see LiveLink.generation). */
  generation?: string;
}

/** <desktop>.<screen>.<frame>[.g<generation>].<unique> */
const FRAME_ID = /^([0-9a-f]{8})\.(\d{1,5})x(\d{1,5})\.(\d{1,5})x(\d{1,5})\.(?:g([0-9a-f]{1,16}\.[0-9a-f]{1,16})\.)?[0-9a-z]+$/;

const BUTTON_MASK: Record<Button, number> = { 1: 1, 2: 2, 3: 4 };
const SCROLL_MASK = { up: 1 << 3, down: 1 << 4, left: 1 << 5, right: 1 << 6 } as const;
/** Frames an action may still name; older ones read as never taken. */
const FRAMES_KEPT = 256;
const DRAG_STEPS = 8;
/**
 * At most one update request per this many ms. The connection carries lossless pixels (Hextile: a few
 * KB for flat content, up to raw size for a photo), so on an animating screen an unpaced pull loop
 * streams as fast as the pipe goes — load that competes with the viewers' streams, and a backlog that
 * every fence (every action) must wait behind. A quiet screen is unaffected: the request is already
 * waiting at the server when the first change comes.
 */
export const UPDATE_INTERVAL_MS = 100;
/**
 * How long the first connection may take: it counts the relay's start through the backend's exec
 * (`docker exec`: a process in dockerd and the container) before the RFB handshake and the first
 * full frame. RfbClient's 10 s suits an open socket; ten desktops starting at once on a loaded
 * 2-core machine took 23–35 s from desktop start to the first frame.
 */
export const LIVE_CONNECT_TIMEOUT_MS = 60_000;

export class LiveScreen implements IDisposable {
  private client: RfbClient | undefined;
  private link: LiveLink | undefined;
  private input: InputChannel | undefined;
  private connecting: Promise<RfbClient> | undefined;
  private connection = new DisposableStore();
  /** Bumps with every connection and every size change: frames of an older epoch are stale. */
  private epoch = 0;
  private epochShown = -1;
  private readonly frames = new Map<string, FrameRecord>();
  private desktopId = '';
  private frameSeq = 0;
  private disposed = false;
  private lastDamageAt = 0;
  /** The last frame's image, so a viewer can be shown the frame an agent acted on. */
  private lastShot: { frameId: string; image: Buffer; format: FrameFormat; width: number; height: number; takenAt?: string } | undefined;
  private readonly damageEmitter = new Emitter<readonly RectArea[]>();
  /** Areas painted by each update of the live connection. */
  readonly onDamage: Event<readonly RectArea[]> = this.damageEmitter.event;

  constructor(
    private readonly open: () => Promise<LiveLink>,
    private readonly why: { stopping: () => SandboxDeskError },
    private readonly updateIntervalMs = UPDATE_INTERVAL_MS,
  ) {}

  /** The live client, connecting (again) if there is none. */
  async live(): Promise<RfbClient> {
    if (this.disposed) throw this.why.stopping();
    if (this.client) return this.client;
    this.connecting ??= this.connect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async connect(): Promise<RfbClient> {
    const link = await this.open();
    let client: RfbClient;
    try {
      client = await RfbClient.connect(link.transport, { encodings: LIVE_ENCODINGS, timeoutMs: LIVE_CONNECT_TIMEOUT_MS });
      await client.requestUpdate(false, LIVE_CONNECT_TIMEOUT_MS);
    } catch (err) {
      link.dispose();
      throw err;
    }
    if (this.disposed) {
      client.dispose();
      link.dispose();
      throw this.why.stopping();
    }
    const conn = new DisposableStore();
    this.connection = conn;
    this.epoch++;
    this.lastDamageAt = Date.now();
    // One incremental request outstanding (noVNC's loop), paced: see UPDATE_INTERVAL_MS.
    let askedAt = Date.now();
    let pacing: NodeJS.Timeout | undefined;
    const ask = (): void => {
      pacing = undefined;
      askedAt = Date.now();
      client.askForUpdate(true);
    };
    conn.add(
      client.onUpdate(() => {
        if (pacing) return;
        const wait = askedAt + this.updateIntervalMs - Date.now();
        if (wait <= 0) ask();
        else pacing = setTimeout(ask, wait);
      }),
    );
    conn.add({ dispose: () => clearTimeout(pacing) });
    conn.add(
      client.onDamage((rects) => {
        this.lastDamageAt = Date.now();
        this.damageEmitter.fire(rects);
      }),
    );
    conn.add(client.onResize(() => this.epoch++));
    conn.add(
      client.onClose(() => {
        if (this.client === client) {
          this.client = undefined;
          this.link = undefined;
        }
        conn.dispose();
        link.dispose();
      }),
    );
    conn.add(client);
    client.askForUpdate(true);
    this.client = client;
    this.link = link;
    const openInput = link.openInput?.bind(link);
    this.input = openInput ? conn.add(new InputChannel(openInput, LIVE_CONNECT_TIMEOUT_MS)) : undefined;
    this.desktopId = link.desktopId;
    return client;
  }

  /** The screen's size now (connecting if needed). */
  async geometry(): Promise<{ width: number; height: number }> {
    const c = await this.live();
    return { width: c.width, height: c.height };
  }

  /**
   * Resizes the desktop over this connection (SetDesktopSize), resolved once the server confirmed it:
   * the answer comes in the same update as the new size, so the next screenshot here has it. Sent even
   * when the size looks the same already: another viewer's resize may still be on its way to us.
   */
  async resize(width: number, height: number): Promise<void> {
    const client = await this.live();
    await client.resize(width, height);
  }

  /** The current framebuffer as a frame: scaled into the maximum asked, encoded off the event loop. */
  async screenshot(opts: ScreenshotOptions = {}): Promise<{ frame: Frame; image: Buffer }> {
    const client = await this.live();
    // Read before the pixels: a resize after this read makes the frame stale, never the reverse.
    const generation = await this.link?.generation?.();
    const g = fitFrame(client.width, client.height, opts);
    const epoch = this.epoch;
    const rgba = scaleRgba(client.framebuffer(), g);
    const format = opts.format ?? 'png';
    // <desktop>.<screen>.<frame>[.g<generation>].<unique>: enough for another process to check it against the screen.
    const frameId = `${this.desktopId}.${g.screenWidth}x${g.screenHeight}.${g.width}x${g.height}.${generation ? `g${generation}.` : ''}${(++this.frameSeq).toString(36)}${randomBytes(3).toString('hex')}`;
    const takenAt = new Date().toISOString();
    this.frames.set(frameId, { ...g, epoch, ...(generation ? { generation } : {}) });
    for (const old of this.frames.keys()) {
      if (this.frames.size <= FRAMES_KEPT) break;
      this.frames.delete(old);
    }
    const firstSinceChange = this.epochShown !== epoch;
    this.epochShown = epoch;
    const image = await encodeFrame(rgba, g.width, g.height, format, opts.quality);
    this.lastShot = { frameId, image, format, width: g.width, height: g.height, takenAt };
    return { frame: { frameId, ...g, scale: g.scale, takenAt, format, firstSinceChange }, image };
  }

  /** The image of a frame, if it is the last one taken here. */
  imageOf(frameId: string): { image: Buffer; format: FrameFormat; width: number; height: number; takenAt?: string } | undefined {
    return this.lastShot?.frameId === frameId ? this.lastShot : undefined;
  }

  /** The screen size as last seen (no connection made). */
  get lastScreen(): { width: number; height: number } {
    return { width: this.client?.width ?? 0, height: this.client?.height ?? 0 };
  }

  /** A point of an action, in screen pixels: checked against the frame it names (or the screen). */
  private resolve(screen: { width: number; height: number }, frameId: string | undefined, x: number, y: number): { x: number; y: number } {
    if (frameId === undefined) {
      checkPoint(screen, x, y, 'the screen');
      return { x, y };
    }
    const f = this.frame(frameId, screen);
    checkPoint(f, x, y, `frame ${frameId}`);
    return frameToScreen(f, x, y);
  }

  /** The geometry generation a frame carries (taken here, or named in its id), if any. */
  private frameGeneration(frameId: string): string | undefined {
    return this.frames.get(frameId)?.generation ?? FRAME_ID.exec(frameId)?.[6];
  }

  private frame(frameId: string, screen: { width: number; height: number }): FrameRecord {
    const f = this.frames.get(frameId) ?? this.frameOfAnotherProcess(frameId, screen);
    if (!f) {
      throw new SandboxDeskError(
        'invalid_input',
        `frame ${JSON.stringify(frameId)} was never taken on this desktop (or is older than its last ${FRAMES_KEPT} frames)`,
        {
          hint: 'take a screenshot and use its frameId',
        },
      );
    }
    if (f.epoch !== this.epoch) throw staleFrame(frameId, f, screen);
    return f;
  }

  /**
   * The X server says the geometry changed, but its DesktopSize update may not have reached this
   * connection yet (Xvnc sends it with the next framebuffer update): wait a little for it, so the
   * refusal names the screen as it now is. A resize there and back changes no size: then the wait ends
   * at its limit and the size read is the right one anyway.
   */
  private settledScreen(screen: { width: number; height: number }): Promise<{ width: number; height: number }> {
    const client = this.client;
    if (!client) return Promise.resolve(screen);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        sub.dispose();
        resolve({ width: client.width, height: client.height });
      };
      const timer = setTimeout(done, SETTLE_MS);
      const sub = client.onResize(done);
    });
  }

  /**
   * A frame that names a geometry generation must still be in it: asked of the X server, so a resize
   * and back made by another process (which this connection may not have seen) reads as stale too.
   */
  private async checkGeneration(link: LiveLink, frameId: string, screen: { width: number; height: number }): Promise<void> {
    const f = this.frame(frameId, screen);
    if (f.generation === undefined || !link.generation) return;
    const now = await link.generation();
    if (now !== undefined && now !== f.generation) {
      f.epoch = -1;
      throw staleFrame(frameId, f, await this.settledScreen(screen));
    }
  }

  /**
   * A frame this process did not take (another CLI call took it): trusted as far as its id says —
   * the same desktop run and screen size as now are the current epoch, anything else is stale. A
   * resize there and back between two processes is caught by the generation the id carries.
   */
  private frameOfAnotherProcess(frameId: string, screen: { width: number; height: number }): FrameRecord | undefined {
    const m = FRAME_ID.exec(frameId);
    if (!m) return undefined;
    const [screenWidth, screenHeight, width, height] = m.slice(2, 6).map(Number) as [number, number, number, number];
    if (width < 1 || height < 1 || width > screenWidth || height > screenHeight) return undefined;
    const same = m[1] === this.desktopId && screenWidth === screen.width && screenHeight === screen.height;
    const record = { width, height, screenWidth, screenHeight, epoch: same ? this.epoch : -1, ...(m[6] ? { generation: m[6] } : {}) };
    this.frames.set(frameId, record);
    return record;
  }

  /** Sends the action over RFB, waits until Xvnc has handled it (a fence), then measures the pointer. */
  async act(action: ScreenAction, frameId?: string): Promise<ActionResult> {
    // Text and keys are checked before anything connects: bad input is refused the same way always.
    const keysyms = action.kind === 'type' ? keysymsForText(action.text) : [];
    const keyPlan = action.kind === 'key' ? planKeys(action.keys) : undefined;
    if (action.kind === 'scroll') {
      const amount = action.amount ?? 3;
      if (!Number.isInteger(amount) || amount < 1 || amount > 100)
        throw new SandboxDeskError('invalid_input', `scroll amount must be a whole number 1–100, got ${amount}`);
      if (!(action.direction in SCROLL_MASK))
        throw new SandboxDeskError(
          'invalid_input',
          `scroll direction must be up, down, left or right, got ${JSON.stringify(action.direction)}`,
        );
    }
    const live = await this.live();
    const link = this.link!;
    const input = this.input;
    // A size change another viewer made may still be on its way to us: a fence round trip brings
    // everything the server sent before it, so the frame check below sees the screen as it is. Where
    // the frame and the X server both carry the geometry generation, that check alone is exact (every
    // resize bumps it) and the fence — behind whatever pixels the live connection is receiving — is not needed.
    if (frameId !== undefined) {
      if (!(link.generation && this.frameGeneration(frameId) !== undefined)) await live.sync();
      await this.checkGeneration(link, frameId, { width: live.width, height: live.height });
    }
    // Geometry from the live connection; the events and their fences over the input one when there is one.
    const screen = { width: live.width, height: live.height };
    const client = input?.ready() ?? live;
    let target: { x: number; y: number } | undefined;
    let via: Pick<ActionResult, 'via' | 'note'> = { via: 'rfb' };
    const button = 'button' in action && action.button !== undefined ? action.button : 1;
    if (!(button in BUTTON_MASK))
      throw new SandboxDeskError('invalid_input', `button must be 1 (left), 2 (middle) or 3 (right), got ${String(button)}`);
    const mask = BUTTON_MASK[button];
    switch (action.kind) {
      case 'move':
        target = this.resolve(screen, frameId, action.x, action.y);
        client.pointer(target.x, target.y, 0);
        break;
      case 'click':
        target = this.resolve(screen, frameId, action.x, action.y);
        client.pointer(target.x, target.y, 0);
        for (let i = 0; i < (action.double ? 2 : 1); i++) {
          client.pointer(target.x, target.y, mask);
          client.pointer(target.x, target.y, 0);
        }
        break;
      case 'drag': {
        const from = this.resolve(screen, frameId, action.x, action.y);
        target = this.resolve(screen, frameId, action.toX, action.toY);
        client.pointer(from.x, from.y, 0);
        client.pointer(from.x, from.y, mask);
        // Intermediate moves, so pages see a drag rather than a jump.
        for (let i = 1; i < DRAG_STEPS; i++) {
          client.pointer(
            Math.round(from.x + ((target.x - from.x) * i) / DRAG_STEPS),
            Math.round(from.y + ((target.y - from.y) * i) / DRAG_STEPS),
            mask,
          );
        }
        client.pointer(target.x, target.y, mask);
        client.pointer(target.x, target.y, 0);
        break;
      }
      case 'scroll':
        target = this.resolve(screen, frameId, action.x, action.y);
        client.pointer(target.x, target.y, 0);
        for (let i = 0; i < (action.amount ?? 3); i++) {
          client.pointer(target.x, target.y, SCROLL_MASK[action.direction]);
          client.pointer(target.x, target.y, 0);
        }
        break;
      case 'type':
        for (const k of keysyms) {
          client.key(k, true);
          client.key(k, false);
        }
        break;
      case 'key':
        if (keyPlan?.via === 'xdotool') {
          // RFB carries keysyms, and ours has no table for these names: X resolves them through xdotool.
          if (!link.xdotoolKeys)
            throw new SandboxDeskError(
              'invalid_input',
              `${keyPlan.outside.join(', ')} in keys ${JSON.stringify(action.keys)}: not in the RFB key table`,
            );
          await client.sync();
          await link.xdotoolKeys(keyPlan.combos);
          via = { via: 'xdotool', note: `${keyPlan.outside.join(', ')} not in the RFB key table: the keys were sent with xdotool key` };
          break;
        }
        for (const combo of keyPlan?.combos ?? []) {
          for (const k of combo) client.key(k, true);
          for (const k of [...combo].reverse()) client.key(k, false);
        }
        break;
    }
    await client.sync();
    const pointer = await link.measurePointer();
    const result: ActionResult = { pointer, ...via, ...(target ? { target } : {}) };
    if (frameId !== undefined) {
      const f = this.frames.get(frameId);
      if (f) Object.assign(result, { frameId, pointerInFrame: screenToFrame(f, pointer.x, pointer.y) });
    }
    return result;
  }

  /** Resolves true at the first update painting inside `region` (screen pixels; default anywhere), false at the timeout. */
  async waitForChange(opts: { region?: RectArea; timeoutMs: number }): Promise<boolean> {
    await this.live();
    const r = opts.region;
    if (r) checkRegion(r);
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => done(false), opts.timeoutMs);
      const sub = this.onDamage((rects) => {
        if (!r || rects.some((d) => d.x < r.x + r.width && r.x < d.x + d.width && d.y < r.y + r.height && r.y < d.y + d.height)) done(true);
      });
      const done = (v: boolean): void => {
        clearTimeout(timer);
        sub.dispose();
        resolve(v);
      };
    });
  }

  /** Resolves true once no update has painted for quietMs, false at the timeout. */
  async waitUntilStable(opts: { quietMs: number; timeoutMs: number }): Promise<boolean> {
    await this.live();
    const start = Date.now();
    // Measure quiet from now: an update already on its way must not count as "before".
    this.lastDamageAt = Math.max(this.lastDamageAt, start);
    for (;;) {
      const quietFor = Date.now() - this.lastDamageAt;
      if (quietFor >= opts.quietMs) return true;
      const left = opts.timeoutMs - (Date.now() - start);
      if (left <= 0) return false;
      await new Promise((r) => setTimeout(r, Math.min(left, opts.quietMs - quietFor)));
    }
  }

  /**
   * Drops the connection (the desktop is stopping); the next call connects again, and frames taken
   * before stay known, so using one reads as stale_frame rather than "never taken".
   */
  disconnect(): void {
    const client = this.client;
    this.client = undefined;
    this.connection.dispose();
    this.link?.dispose();
    this.link = undefined;
    client?.dispose();
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.connection.dispose();
    this.link?.dispose();
    this.client = undefined;
    this.damageEmitter.dispose();
  }
}

function checkRegion(r: RectArea): void {
  for (const [k, v] of Object.entries(r)) {
    if (!Number.isInteger(v) || v < 0) throw new SandboxDeskError('invalid_input', `region.${k} must be a whole number ≥ 0, got ${v}`);
  }
  if (r.width < 1 || r.height < 1) throw new SandboxDeskError('invalid_input', `region must be at least 1x1, got ${r.width}x${r.height}`);
}

function staleFrame(frameId: string, f: FrameGeometry, screen: { width: number; height: number }): SandboxDeskError {
  return new SandboxDeskError(
    'stale_frame',
    `frame ${frameId} (${f.width}x${f.height} of a ${f.screenWidth}x${f.screenHeight} screen) was taken before the screen changed (resized, or the desktop restarted); the screen is now ${screen.width}x${screen.height}`,
    {
      hint: 'take a new screenshot and use its coordinates',
      details: { current: screen },
    },
  );
}
