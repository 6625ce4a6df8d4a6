import { randomBytes } from 'node:crypto';
import type { CoreEventBus, OperationView } from '../shared/core-events.js';
import type { OperationStore } from '../store/operation-store.js';
import { processAlive } from '../platform/process-alive.js';

/** Progress is written to the database at most this often per operation (the last step always is). */
const PERSIST_EVERY_MS = 150;

export interface TrackedOperation {
  readonly id: string;
  progress(message: string, fraction?: number | null): void;
  /** Ends it: no error is success; a `cancelled` code reads as cancelled. */
  end(error?: { code?: string; message: string } | null): void;
}

/**
 * Long operations of any kind (create, start, desktop-start, image-build, checkpoint…) as one list:
 * each is persisted (so another process's window shows it) and published as an `operation` event.
 * The worker only says what happened; this keeps the row and the event in step.
 */
export class OperationTracker {
  constructor(
    private readonly store: OperationStore,
    private readonly bus: CoreEventBus,
    private readonly onError: (err: unknown) => void = () => undefined,
    private readonly now: () => number = Date.now,
  ) {}

  start(kind: string, target: string, sandbox: string | null, id = randomBytes(8).toString('hex')): TrackedOperation {
    const at = new Date(this.now()).toISOString();
    const op: OperationView = {
      id,
      kind,
      target,
      sandbox,
      state: 'running',
      message: null,
      fraction: null,
      error: null,
      startedAt: at,
      updatedAt: at,
      pid: process.pid,
    };
    let persistedAt = 0;
    let pending: ReturnType<typeof setTimeout> | null = null;
    let ended = false;
    const save = (): void => {
      if (pending) clearTimeout(pending);
      pending = null;
      persistedAt = this.now();
      try {
        this.store.put({ ...op });
      } catch (err) {
        this.onError(err);
      }
      this.bus.publish({ topic: 'operation', operation: { ...op } });
    };
    save();
    return {
      id,
      progress: (message, fraction = null) => {
        if (ended) return;
        op.message = message;
        op.fraction = fraction;
        op.updatedAt = new Date(this.now()).toISOString();
        // A chatty build (hundreds of lines a second) is coalesced: the latest step wins.
        const wait = PERSIST_EVERY_MS - (this.now() - persistedAt);
        if (wait <= 0) save();
        else if (!pending) {
          pending = setTimeout(save, wait);
          pending.unref?.();
        }
      },
      end: (error = null) => {
        if (ended) return;
        ended = true;
        op.state = error ? (error.code === 'cancelled' ? 'cancelled' : 'failed') : 'succeeded';
        op.error = error?.message ?? null;
        op.fraction = error ? op.fraction : 1;
        op.updatedAt = new Date(this.now()).toISOString();
        save();
      },
    };
  }

  /** Recent operations of every process, the newest first (what a task list opens with). */
  list(limit = 50): OperationView[] {
    try {
      for (const o of this.store.reapOrphans(processAlive)) this.bus.publish({ topic: 'operation', operation: o });
    } catch (err) {
      this.onError(err);
    }
    return this.store.list(limit);
  }
}
