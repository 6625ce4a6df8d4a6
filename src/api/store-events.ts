import type { CoreEventBus, CoreEventInput } from '../shared/core-events.js';
import type { IDisposable } from '../shared/lifecycle.js';
import type { StoreChange, StoreChanges } from '../store/store-changes.js';

/** A store write as the event a client acts on. */
export function eventOfChange(c: StoreChange): CoreEventInput {
  switch (c.table) {
    case 'sandboxes':
      return { topic: 'sandbox', sandbox: c.sandbox, reason: c.what === 'delete' ? 'removed' : `record:${c.what}` };
    case 'sessions':
      return { topic: 'session', sandbox: c.sandbox, session: c.session };
    case 'leases':
      return { topic: 'lease', sandbox: c.sandbox };
    case 'call_log':
      return { topic: 'callLog', sandbox: c.sandbox, session: c.session };
  }
}

/** Publishes every write to a shown table (sessions, the cwd, leases, the call log) on the bus. */
export function publishStoreChanges(changes: StoreChanges, bus: CoreEventBus): IDisposable {
  return changes.onChange((c) => bus.publish(eventOfChange(c)));
}
