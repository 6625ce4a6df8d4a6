import type { CoreEventBus } from '../shared/core-events.js';
import type { Event } from '../shared/lifecycle.js';
import { asSandboxDeskError } from '../shared/errors.js';
import type { DesktopStatus } from '../shared/desktop-types.js';
import type { OperationTracker } from './operation-tracker.js';

interface DesktopLike {
  start(sandbox: string, ...rest: never[]): Promise<DesktopStatus>;
  stop(sandbox: string): Promise<DesktopStatus>;
  onActionRecorded?: Event<{ sandbox: string }>;
}

/**
 * Desktop start and stop as pushed state: a start is a tracked operation (it takes seconds; the task
 * list shows it), and both publish a `desktop` event with the outcome. Wraps the instance's own two
 * methods once, so every caller — dispatch, the CLI, MCP — is covered without each remembering to.
 */
export function publishDesktopChanges(desktop: DesktopLike, bus: CoreEventBus, ops: OperationTracker): void {
  desktop.onActionRecorded?.(({ sandbox }) => bus.publish({ topic: 'agentAction', sandbox }));
  const start = desktop.start.bind(desktop);
  const stop = desktop.stop.bind(desktop);
  desktop.start = async (sandbox: string, ...rest: never[]) => {
    const op = ops.start('desktop-start', sandbox, sandbox);
    op.progress('starting the desktop (X server, window manager, browser)');
    try {
      const status = await start(sandbox, ...rest);
      op.end(status.running ? null : { message: status.reason ?? 'the desktop did not start' });
      bus.publish({ topic: 'desktop', sandbox, running: status.running });
      return status;
    } catch (err) {
      const e = asSandboxDeskError(err);
      op.end({ code: e.code, message: e.message });
      bus.publish({ topic: 'desktop', sandbox, running: null });
      throw err;
    }
  };
  desktop.stop = async (sandbox: string) => {
    try {
      const status = await stop(sandbox);
      bus.publish({ topic: 'desktop', sandbox, running: status.running });
      return status;
    } catch (err) {
      bus.publish({ topic: 'desktop', sandbox, running: null });
      throw err;
    }
  };
}
