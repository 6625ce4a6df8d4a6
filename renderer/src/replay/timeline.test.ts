import { describe, expect, it } from 'vitest';
import type { ReplayEvent } from '../../../src/shared/replay-types.js';
import {
  currentEventIndex,
  formatOffset,
  formatReadout,
  fractionOf,
  frameTimeOf,
  nextEventAt,
  playFrameWidth,
  previousEventAt,
  spanOf,
} from './timeline.js';

const ev = (at: string, over: Partial<ReplayEvent> = {}): ReplayEvent => ({ at, kind: 'command', summary: at, ...over });
const T = (s: number) => Date.parse('2026-01-01T00:00:00.000Z') + s * 1000;
const iso = (s: number) => new Date(T(s)).toISOString();
const events = [ev(iso(1)), ev(iso(3)), ev(iso(3)), ev(iso(7))];

describe('the replay timeline', () => {
  it('the span covers every part; nothing recorded is null', () => {
    expect(spanOf({ startedAt: iso(2), endedAt: iso(5) }, { startedAt: iso(0), endedAt: iso(4) })).toEqual({ startMs: T(0), endMs: T(5) });
    expect(spanOf({ startedAt: null, endedAt: null }, null)).toBeNull();
  });

  it('fraction is clamped to the span; an instant is 0', () => {
    const span = { startMs: T(0), endMs: T(10) };
    expect(fractionOf(T(5), span)).toBe(0.5);
    expect(fractionOf(T(20), span)).toBe(1);
    expect(fractionOf(T(1), { startMs: T(1), endMs: T(1) })).toBe(0);
  });

  it('current, next and previous events around t', () => {
    expect(currentEventIndex(events, T(0))).toBe(-1);
    expect(currentEventIndex(events, T(3))).toBe(2);
    expect(nextEventAt(events, T(3))).toBe(T(7));
    expect(nextEventAt(events, T(7))).toBeNull();
    expect(previousEventAt(events, T(3))).toBe(T(1));
    expect(previousEventAt(events, T(1))).toBeNull();
  });

  it('offsets read m:ss.s, and h:mm:ss.s past an hour', () => {
    expect(formatOffset(65_250)).toBe('1:05.2');
    expect(formatOffset(3_725_000)).toBe('1:02:05.0');
  });

  it('an action that named a frame shows that frame', () => {
    expect(frameTimeOf(ev(iso(5), { frameAt: iso(4) }))).toBe(T(4));
    expect(frameTimeOf(ev(iso(5)))).toBe(T(5));
  });
});

describe('the time readout and the playing frame size', () => {
  it('both sides of the readout have the same shape: tenths, the total’s minute digits, hours when the run has them', () => {
    expect(formatReadout(551_400, 551_400)).toBe('9:11.4 / 9:11.4');
    expect(formatReadout(5_200, 731_400)).toBe('00:05.2 / 12:11.4');
    expect(formatReadout(5_200, 3_700_000)).toBe('0:00:05.2 / 1:01:40.0');
    expect(formatReadout(0, 0)).toBe('0:00.0 / 0:00.0');
    // Outside the span (a recording that grew under the thumb) it stays within it.
    expect(formatReadout(-50, 20_000)).toBe('0:00.0 / 0:20.0');
    expect(formatReadout(25_000, 20_000)).toBe('0:20.0 / 0:20.0');
  });

  it('a playing frame is asked at the pane’s device width, never above the screen’s; no size yet: the full screen', () => {
    expect(playFrameWidth(640, 1, 1280)).toBe(640);
    expect(playFrameWidth(640.2, 1.5, 1280)).toBe(961);
    expect(playFrameWidth(900, 2, 1280)).toBeUndefined();
    expect(playFrameWidth(0, 1, 1280)).toBeUndefined();
    expect(playFrameWidth(640, 0, null)).toBe(640);
  });
});
