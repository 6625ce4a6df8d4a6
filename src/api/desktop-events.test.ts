import { describe, expect, it } from 'vitest';
import { CoreEventBus, type CoreEvent } from '../shared/core-events.js';
import type { DesktopStatus } from '../shared/desktop-types.js';
import { Emitter } from '../shared/lifecycle.js';
import { publishDesktopChanges } from './desktop-events.js';
import type { OperationTracker } from './operation-tracker.js';

const status = (running: boolean) => ({ running }) as DesktopStatus;

/** A tracker that only counts what it was told (the store behind the real one is not under test here). */
function fakeTracker() {
  const ended: Array<{ message: string } | null> = [];
  const tracker = {
    start: () => ({ progress: () => undefined, end: (e: { message: string } | null) => ended.push(e) }),
  } as unknown as OperationTracker;
  return { tracker, ended };
}

describe('publishDesktopChanges', () => {
  it('a start is a tracked operation and a `desktop` event; a stop and a failed start are events too', async () => {
    const bus = new CoreEventBus();
    const seen: CoreEvent[] = [];
    bus.onEvent((e) => seen.push(e));
    let fail = false;
    const desktop = {
      start: async (_sandbox: string) => {
        if (fail) throw new Error('no X');
        return status(true);
      },
      stop: async (_sandbox: string) => status(false),
    };
    const { tracker, ended } = fakeTracker();
    publishDesktopChanges(desktop, bus, tracker);
    await desktop.start('a');
    await desktop.stop('a');
    fail = true;
    await expect(desktop.start('a')).rejects.toThrow('no X');
    expect(seen.map((e) => e.topic === 'desktop' && [e.sandbox, e.running])).toEqual([
      ['a', true],
      ['a', false],
      ['a', null],
    ]);
    expect(ended).toEqual([null, { code: 'internal', message: 'no X' }]);
  });

  it('an agent action recorded on a desktop becomes an `agentAction` event (viewers stop polling for it)', () => {
    const bus = new CoreEventBus();
    const seen: CoreEvent[] = [];
    bus.onEvent((e) => seen.push(e));
    const recorded = new Emitter<{ sandbox: string }>();
    publishDesktopChanges(
      { start: async () => status(true), stop: async () => status(false), onActionRecorded: recorded.event },
      bus,
      fakeTracker().tracker,
    );
    recorded.fire({ sandbox: 'b' });
    expect(seen).toMatchObject([{ topic: 'agentAction', sandbox: 'b' }]);
  });
});
