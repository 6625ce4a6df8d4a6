import type { CoreEventBus } from '../shared/core-events.js';
import { DisposableStore, type Event, type IDisposable } from '../shared/lifecycle.js';
import { asSandboxDeskError } from '../shared/errors.js';
import type { DesktopStatusChange } from '../desktop/desktop-watch.js';
import type { AgentActionView, AgentRefusalView } from '../shared/desktop-types.js';
import type { OperationTracker } from './operation-tracker.js';

interface DesktopLike {
  onStatusChanged: Event<DesktopStatusChange>;
  onActionRecorded?: Event<{ sandbox: string; action?: AgentActionView }>;
  /** An agent action refused while a person held control (DesktopService.onActionRefused). */
  onActionRefused?: Event<AgentRefusalView>;
  /** Follow running desktops (resizes, deaths inside the sandbox) while someone listens. */
  watchDesktops?(on: boolean): void;
}

type Op = ReturnType<OperationTracker['start']>;

/**
 * The desktop's own changes as pushed state: a start is a tracked operation (it takes seconds; the
 * task list shows it), and every change DesktopService tells (`onStatusChanged`: start, stop, a
 * resize, a death inside the sandbox) is a `desktop` event. Desktops are watched only while a client
 * listens to the event stream (a watch is a live connection into the sandbox).
 */
export function publishDesktopChanges(desktop: DesktopLike, bus: CoreEventBus, ops: OperationTracker): IDisposable {
  const store = new DisposableStore();
  if (desktop.onActionRecorded)
    store.add(
      desktop.onActionRecorded(({ sandbox, action: a }) =>
        bus.publish({
          topic: 'agentAction',
          sandbox,
          // The frame's image stays out: events are journalled for other processes, and the viewer needs only the point.
          ...(a ? { action: { at: a.at, kind: a.kind, target: a.target, screen: a.screen, session: a.session ?? null } } : {}),
        }),
      ),
    );
  // The refusal travels in the event: the person's window (often another process) shows it as it is.
  if (desktop.onActionRefused)
    store.add(desktop.onActionRefused((refusal) => bus.publish({ topic: 'agentRefused', sandbox: refusal.sandbox, refusal })));
  if (desktop.watchDesktops) {
    const watch = desktop.watchDesktops.bind(desktop);
    store.add(bus.onListening(watch));
    if (bus.listened) watch(true);
    store.add({ dispose: () => watch(false) });
  }
  // Starts of one sandbox end in the order they began (DesktopService fires starting, then the outcome).
  const starts = new Map<string, Op[]>();
  const endStart = (sandbox: string, error: { code?: string; message: string } | null) => {
    const queue = starts.get(sandbox);
    queue?.shift()?.end(error);
    if (queue?.length === 0) starts.delete(sandbox);
  };
  store.add(
    desktop.onStatusChanged((c) => {
      const { sandbox } = c;
      switch (c.cause) {
        case 'starting': {
          const op = ops.start('desktop-start', sandbox, sandbox);
          op.progress('starting the desktop (X server, window manager, browser)');
          starts.set(sandbox, [...(starts.get(sandbox) ?? []), op]);
          return;
        }
        case 'started':
          endStart(sandbox, c.running ? null : { message: c.reason ?? 'the desktop did not start' });
          return bus.publish({ topic: 'desktop', sandbox, running: c.running, cause: 'started' });
        case 'start-failed': {
          const e = asSandboxDeskError(c.error);
          endStart(sandbox, { code: e.code, message: e.message });
          return bus.publish({ topic: 'desktop', sandbox, running: null });
        }
        case 'stop-failed':
          return bus.publish({ topic: 'desktop', sandbox, running: null });
        case 'stopped':
        case 'crashed':
          return bus.publish({ topic: 'desktop', sandbox, running: false, cause: c.cause });
        case 'resized':
          return bus.publish({ topic: 'desktop', sandbox, running: true, cause: 'resized' });
      }
    }),
  );
  return store;
}
