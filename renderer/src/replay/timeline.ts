import type { ReplayEvent } from '../../../src/shared/replay-types.js';

/** Playback speeds, and the key that picks each (shown in the help line). */
export const SPEEDS = [
  { speed: 1, key: '1' },
  { speed: 4, key: '4' },
  { speed: 16, key: '6' },
] as const;
export type Speed = (typeof SPEEDS)[number]['speed'];

export interface Span {
  startMs: number;
  endMs: number;
}

/** The run's span: the events answer's, widened by the recording's; null when nothing was recorded. */
export function spanOf(...spans: Array<{ startedAt: string | null; endedAt: string | null } | null | undefined>): Span | null {
  let startMs = Infinity;
  let endMs = -Infinity;
  for (const s of spans) {
    if (!s) continue;
    if (s.startedAt) startMs = Math.min(startMs, Date.parse(s.startedAt));
    if (s.endedAt) endMs = Math.max(endMs, Date.parse(s.endedAt));
  }
  if (!Number.isFinite(startMs) || !Number.isFinite(endMs)) return null;
  return { startMs, endMs: Math.max(startMs, endMs) };
}

export const clamp = (t: number, span: Span): number => Math.min(span.endMs, Math.max(span.startMs, t));

/** Where `t` sits on the span, 0..1 (a span of one instant: 0). */
export function fractionOf(t: number, span: Span): number {
  const len = span.endMs - span.startMs;
  return len <= 0 ? 0 : (clamp(t, span) - span.startMs) / len;
}

const atMs = (e: ReplayEvent) => Date.parse(e.at);

/** The last event at or before t (the one "current" at t), or -1. Events are oldest first. */
export function currentEventIndex(events: readonly ReplayEvent[], t: number): number {
  let found = -1;
  for (let i = 0; i < events.length; i++) {
    if (atMs(events[i]!) <= t) found = i;
    else break;
  }
  return found;
}

/** The time of the first event after t (→), or null when none. */
export function nextEventAt(events: readonly ReplayEvent[], t: number): number | null {
  for (const e of events) if (atMs(e) > t) return atMs(e);
  return null;
}

/** The time of the last event before t (←), or null when none. */
export function previousEventAt(events: readonly ReplayEvent[], t: number): number | null {
  let found: number | null = null;
  for (const e of events) {
    if (atMs(e) < t) found = atMs(e);
    else break;
  }
  return found;
}

/** "1:05.2" after the start (h:mm:ss.s past an hour). */
export function formatOffset(ms: number): string {
  const tenths = Math.max(0, Math.floor(ms / 100));
  const s = Math.floor(tenths / 10);
  const rest = `${String(s % 60).padStart(2, '0')}.${tenths % 10}`;
  const m = Math.floor(s / 60);
  return m >= 60 ? `${Math.floor(m / 60)}:${String(m % 60).padStart(2, '0')}:${rest}` : `${m}:${rest}`;
}

/** The time the screen should show for an event: the frame the action used, else the moment it happened. */
export function frameTimeOf(e: ReplayEvent): number {
  return e.frameAt ? Date.parse(e.frameAt) : atMs(e);
}

/**
 * The scrubber's readout, "elapsed / total", both sides in the same shape (hours when the run has
 * them, minutes padded to the total's digits, tenths on both): it keeps one width while it plays.
 */
export function formatReadout(elapsedMs: number, totalMs: number): string {
  const total = formatOffset(totalMs);
  const elapsed = formatOffset(Math.min(Math.max(0, elapsedMs), Math.max(0, totalMs)));
  const fields = total.split(':').length;
  let parts = elapsed.split(':');
  while (parts.length < fields) parts = ['0', ...parts];
  // Minutes under hours are two digits (a readout that gained its hours field: "0:0:05.2" → "0:00:05.2").
  for (let i = 1; i < parts.length - 1; i++) parts[i] = parts[i]!.padStart(2, '0');
  const width = total.split(':')[0]!.length;
  parts[0] = parts[0]!.padStart(width, '0');
  return `${parts.join(':')} / ${total}`;
}

/**
 * While playing, frames are asked at most this often (one at a time): 4× and 16× show the recorded
 * updates between keyframes at up to 8 frames a second without asking the core faster than it draws.
 */
export const PLAY_FRAME_EVERY_MS = 125;

/**
 * The width to ask a playing frame at: the pane's width in device pixels (a smaller picture is
 * quicker to draw, send and decode), never above the screen's own; undefined when the pane has no
 * size yet (then the full screen).
 */
export function playFrameWidth(paneCssWidth: number, devicePixelRatio: number, screenWidth: number | null): number | undefined {
  const px = Math.ceil(paneCssWidth * (devicePixelRatio > 0 ? devicePixelRatio : 1));
  if (!Number.isFinite(px) || px < 16) return undefined;
  if (screenWidth !== null && px >= screenWidth) return undefined;
  return Math.min(px, 8192);
}
