import { describe, expect, it } from 'vitest';
import { CoreEventBus, type CoreEvent } from '../shared/core-events.js';
import { Emitter } from '../shared/lifecycle.js';
import { SandboxDeskError } from '../shared/errors.js';
import type { DesktopStatusChange } from '../desktop/desktop-watch.js';
import type { AgentActionView, AgentRefusalView } from '../shared/desktop-types.js';
import { publishDesktopChanges } from './desktop-events.js';
import type { OperationTracker } from './operation-tracker.js';

/** A tracker that only counts what it was told (the store behind the real one is not under test here). */
function fakeTracker() {
  const started: string[] = [];
  const ended: Array<{ message: string } | null> = [];
  const tracker = {
    start: (kind: string) => {
      started.push(kind);
      return { progress: () => undefined, end: (e: { message: string } | null) => ended.push(e) };
    },
  } as unknown as OperationTracker;
  return { tracker, started, ended };
}

function setup() {
  const bus = new CoreEventBus();
  const seen: CoreEvent[] = [];
  bus.onEvent((e) => seen.push(e));
  const changed = new Emitter<DesktopStatusChange>();
  const recorded = new Emitter<{ sandbox: string; action?: AgentActionView }>();
  const refused = new Emitter<AgentRefusalView>();
  const watching: boolean[] = [];
  const t = fakeTracker();
  const sub = publishDesktopChanges(
    {
      onStatusChanged: changed.event,
      onActionRecorded: recorded.event,
      onActionRefused: refused.event,
      watchDesktops: (on) => watching.push(on),
    },
    bus,
    t.tracker,
  );
  const desktops = () => seen.flatMap((e) => (e.topic === 'desktop' ? [[e.sandbox, e.running, e.cause]] : []));
  return { bus, seen, changed, recorded, refused, watching, sub, desktops, ...t };
}

describe('publishDesktopChanges', () => {
  it('a start is a tracked operation ended by its outcome; start, stop and failures are `desktop` events', () => {
    const t = setup();
    t.changed.fire({ sandbox: 'a', cause: 'starting', running: null });
    expect(t.started).toEqual(['desktop-start']);
    expect(t.ended).toEqual([]);
    t.changed.fire({ sandbox: 'a', cause: 'started', running: true, reason: null });
    t.changed.fire({ sandbox: 'a', cause: 'stopped', running: false, reason: null });
    t.changed.fire({ sandbox: 'a', cause: 'starting', running: null });
    t.changed.fire({ sandbox: 'a', cause: 'start-failed', running: null, error: new SandboxDeskError('backend_unavailable', 'no X') });
    t.changed.fire({ sandbox: 'a', cause: 'starting', running: null });
    t.changed.fire({ sandbox: 'a', cause: 'started', running: false, reason: 'Xvnc exited' });
    expect(t.desktops()).toEqual([
      ['a', true, 'started'],
      ['a', false, 'stopped'],
      ['a', null, undefined],
      ['a', false, 'started'],
    ]);
    expect(t.ended).toEqual([null, { code: 'backend_unavailable', message: 'no X' }, { message: 'Xvnc exited' }]);
  });

  it('a death inside the sandbox and a resize are `desktop` events with their cause', () => {
    const t = setup();
    t.changed.fire({ sandbox: 'a', cause: 'crashed', running: false, reason: 'Xvnc closed its RFB socket' });
    t.changed.fire({ sandbox: 'b', cause: 'resized', running: true, width: 800, height: 600 });
    expect(t.desktops()).toEqual([
      ['a', false, 'crashed'],
      ['b', true, 'resized'],
    ]);
    expect(t.started).toEqual([]);
  });

  it('desktops are watched only while someone listens to the event stream', () => {
    const t = setup();
    expect(t.watching).toEqual([]);
    const a = t.bus.listen();
    const b = t.bus.listen();
    expect(t.watching).toEqual([true]);
    a.dispose();
    b.dispose();
    expect(t.watching).toEqual([true, false]);
    t.bus.listen();
    t.sub.dispose();
    expect(t.watching).toEqual([true, false, true, false]);
  });

  it('an agent action recorded on a desktop becomes an `agentAction` event (viewers stop polling for it)', () => {
    const t = setup();
    t.recorded.fire({ sandbox: 'b' });
    expect(t.seen).toMatchObject([{ topic: 'agentAction', sandbox: 'b' }]);
  });

  it('the event carries what the action was and where it landed, without the frame image', () => {
    const t = setup();
    t.recorded.fire({
      sandbox: 'b',
      action: {
        sandbox: 'b',
        at: '2026-01-02T03:04:05.000Z',
        kind: 'click',
        target: { x: 100, y: 200 },
        pointer: { x: 100, y: 200 },
        screen: { width: 1280, height: 800 },
        session: 'planner',
        frame: { frameId: 'f1', width: 640, height: 400, image: 'data:image/png;base64,AAAA' },
      },
    });
    expect(t.seen).toEqual([
      expect.objectContaining({
        topic: 'agentAction',
        sandbox: 'b',
        action: {
          at: '2026-01-02T03:04:05.000Z',
          kind: 'click',
          target: { x: 100, y: 200 },
          screen: { width: 1280, height: 800 },
          session: 'planner',
        },
      }),
    ]);
  });

  it('an agent action refused while a person has control becomes an `agentRefused` event carrying the refusal', () => {
    const t = setup();
    const refusal: AgentRefusalView = {
      sandbox: 'b',
      at: '2026-01-02T03:04:05.000Z',
      kind: 'click',
      target: { x: 100, y: 200 },
      session: 'planner',
      viewerId: 'ui-1',
      message: 'a human holds the control lease',
    };
    t.refused.fire(refusal);
    expect(t.seen).toMatchObject([{ topic: 'agentRefused', sandbox: 'b', refusal }]);
  });
});
