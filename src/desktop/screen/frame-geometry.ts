import { SandboxDeskError } from '../../shared/errors.js';

/**
 * The geometry of a frame (a screenshot) against the screen it was taken of, and the one mapping
 * between their coordinates. A scaled frame samples, for frame pixel f, the screen pixel
 * floor((f + 0.5) * screen / frame) — the screen pixel under the frame pixel's centre — and an action
 * at frame pixel f lands on exactly that screen pixel, so an agent clicks what it was shown.
 */
export interface FrameGeometry {
  /** The frame's size in pixels (what the image has). */
  width: number;
  height: number;
  /** The screen's size when the frame was taken. */
  screenWidth: number;
  screenHeight: number;
}

/** Largest a screen (and so a frame) can be: Xvnc's own limit. */
const MAX_SIDE = 16384;

/**
 * A maximum side as asked: a positive whole number. Above the screen it is no error — "at most" a size
 * the screen is already within means the screen at its own size (scale 1), as `fitFrame` never enlarges.
 */
function positiveSide(v: number | undefined, name: string): number | undefined {
  if (v === undefined) return undefined;
  if (!Number.isInteger(v) || v < 1) {
    throw new SandboxDeskError('invalid_input', `${name} must be a positive whole number of pixels, got ${v}`, {
      hint: `leave ${name} out for a full-size frame`,
    });
  }
  return v;
}

/**
 * The frame size for a screen asked at most maxWidth × maxHeight: the screen scaled by one factor
 * (aspect kept), never enlarged — a maximum above the screen gives the screen as it is, scale 1.
 * `scale` is frame width / screen width.
 */
export function fitFrame(
  screenWidth: number,
  screenHeight: number,
  max: { maxWidth?: number; maxHeight?: number } = {},
): FrameGeometry & { scale: number } {
  const mw = positiveSide(max.maxWidth, 'maxWidth');
  const mh = positiveSide(max.maxHeight, 'maxHeight');
  const s = Math.min(1, mw === undefined ? 1 : mw / screenWidth, mh === undefined ? 1 : mh / screenHeight);
  // floor, not round: the frame must fit inside the maximum asked for.
  const width = Math.max(1, Math.min(mw ?? MAX_SIDE, Math.floor(screenWidth * s + 1e-9)));
  const height = Math.max(1, Math.min(mh ?? MAX_SIDE, Math.floor(screenHeight * s + 1e-9)));
  return { width, height, screenWidth, screenHeight, scale: width / screenWidth };
}

/** The screen pixel a frame pixel shows (and where an action at it lands). */
export function frameToScreen(g: FrameGeometry, x: number, y: number): { x: number; y: number } {
  return { x: Math.floor(((x + 0.5) * g.screenWidth) / g.width), y: Math.floor(((y + 0.5) * g.screenHeight) / g.height) };
}

/**
 * The frame pixel nearest a screen pixel (for reporting the pointer in frame coordinates); the inverse
 * of frameToScreen on every pixel a frame shows.
 */
export function screenToFrame(g: FrameGeometry, x: number, y: number): { x: number; y: number } {
  return {
    x: Math.min(g.width - 1, Math.floor(((x + 0.5) * g.width) / g.screenWidth)),
    y: Math.min(g.height - 1, Math.floor(((y + 0.5) * g.height) / g.screenHeight)),
  };
}

/** Refuses a coordinate that is not a whole pixel inside the frame, naming the frame's geometry. */
export function checkPoint(g: { width: number; height: number }, x: number, y: number, what = 'the frame'): void {
  for (const [name, v, limit] of [
    ['x', x, g.width],
    ['y', y, g.height],
  ] as const) {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v >= limit) {
      throw new SandboxDeskError(
        'invalid_input',
        `${name} ${String(v)} is not a whole pixel inside ${what} (${g.width}x${g.height}: x 0–${g.width - 1}, y 0–${g.height - 1})`,
        {
          hint: 'use coordinates from the frame the action names (frameId), or screen coordinates without one',
          details: { geometry: { width: g.width, height: g.height } },
        },
      );
    }
  }
}

/** Nearest-neighbour downscale with exactly the sampling frameToScreen describes. */
export function scaleRgba(rgba: Uint8Array, g: FrameGeometry): Uint8Array {
  if (g.width === g.screenWidth && g.height === g.screenHeight) return rgba;
  const out = new Uint8Array(g.width * g.height * 4);
  const src = new Uint32Array(rgba.buffer, rgba.byteOffset, rgba.byteLength >>> 2);
  const dst = new Uint32Array(out.buffer);
  const cols = new Int32Array(g.width);
  for (let x = 0; x < g.width; x++) cols[x] = Math.floor(((x + 0.5) * g.screenWidth) / g.width);
  for (let y = 0; y < g.height; y++) {
    const row = Math.floor(((y + 0.5) * g.screenHeight) / g.height) * g.screenWidth;
    const o = y * g.width;
    for (let x = 0; x < g.width; x++) dst[o + x] = src[row + cols[x]!]!;
  }
  return out;
}
