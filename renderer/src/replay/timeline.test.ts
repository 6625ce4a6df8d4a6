import { describe, expect, it } from 'vitest';
import type { ReplayEvent } from '../../../src/shared/replay-types.js';
import { currentEventIndex, formatOffset, fractionOf, frameTimeOf, nextEventAt, previousEventAt, spanOf } from './timeline.js';

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
