import { randomBytes } from 'node:crypto';
import type { CoreEvent, CoreEventBus, CoreEventInput } from '../shared/core-events.js';
import { DisposableStore, toDisposable, type IDisposable } from '../shared/lifecycle.js';
import type { EventJournal } from '../store/event-journal.js';

/**
 * How often the listening process checks whether another one wrote (one PRAGMA). 250 ms keeps a CLI's
 * change under 300 ms to the window (p50, bench/ui-events.ts) while an idle core wakes only 4 times a
 * second: every wake-up is most of what an idle core costs.
 */
/** Topics that stay in the process that published them (never journalled for the others). */
const LOCAL_TOPICS: ReadonlySet<CoreEvent['topic']> = new Set(['stats']);

export const RELAY_POLL_MS = 250;

export interface EventRelayOptions {
  bus: CoreEventBus;
  journal: EventJournal;
  pollMs?: number;
  /** Where a failure to journal goes (a full disk must not break the command that changed state). */
  onError?: (err: unknown) => void;
}

/**
 * Makes the events of every process on one data directory the events of each: this process's own
 * events are appended to the journal table, and — only while a client listens here — the rows other
 * processes appended are re-published on this bus (marked `remote`). SQLite's `data_version` says
 * cheaply whether anyone else wrote since the last look, so an idle relay reads no rows.
 *
 * A change with no journal row (another build, a hand edit) still becomes a `store` event, so the
 * client re-reads instead of showing stale state.
 */
export class EventRelay implements IDisposable {
  readonly origin = `${process.pid}-${randomBytes(4).toString('hex')}`;
  private readonly store = new DisposableStore();
  private timer: ReturnType<typeof setInterval> | null = null;
  private lastId = 0;
  private version = 0;

  constructor(private readonly opts: EventRelayOptions) {
    this.store.add(opts.bus.onEvent((e) => this.record(e)));
    this.store.add(opts.bus.onListening((on) => (on ? this.startTail() : this.stopTail())));
    if (opts.bus.listened) this.startTail();
    this.store.add(toDisposable(() => this.stopTail()));
  }

  private pending: string[] = [];

  /**
   * Journalled at the end of the current task, together: a command writes its record, the cwd and
   * its receipt in one go, and that becomes one commit (and one wake-up of the tailers), not three.
   */
  private record(e: CoreEvent): void {
    if (e.remote) return; // someone else's: it is in the journal already
    // A process's own samples, published only while its own clients watch: no other process needs them.
    if (LOCAL_TOPICS.has(e.topic)) return;
    const { seq: _seq, remote: _r, ...rest } = e;
    if (this.pending.push(JSON.stringify(rest)) === 1) queueMicrotask(() => this.flush());
  }

  /** Writes what is pending (also on dispose, so a CLI that exits right after a change still tells). */
  flush(): void {
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    try {
      this.opts.journal.appendMany(this.origin, batch);
    } catch (err) {
      this.opts.onError?.(err);
    }
  }

  private startTail(): void {
    if (this.timer) return;
    // What happened before anyone listened is not replayed: a new client reads the state itself.
    this.lastId = this.opts.journal.lastId();
    this.version = this.opts.journal.dataVersion();
    this.timer = setInterval(() => this.poll(), this.opts.pollMs ?? RELAY_POLL_MS);
    this.timer.unref?.();
  }

  private stopTail(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One look: nothing to do unless another connection committed since the last one. */
  poll(): void {
    try {
      const v = this.opts.journal.dataVersion();
      if (v === this.version) return;
      this.version = v;
      let rows = this.opts.journal.foreignSince(this.lastId, this.origin);
      let any = false;
      while (rows.length > 0) {
        for (const row of rows) {
          this.lastId = row.id;
          let input: CoreEventInput;
          try {
            input = JSON.parse(row.event) as CoreEventInput;
          } catch {
            continue;
          }
          any = true;
          this.opts.bus.publish({ ...input, remote: true });
        }
        rows = this.opts.journal.foreignSince(this.lastId, this.origin);
      }
      if (!any) this.opts.bus.publish({ topic: 'store', reason: 'another process changed the database' });
    } catch (err) {
      this.opts.onError?.(err);
    }
  }

  dispose(): void {
    this.flush();
    this.store.dispose();
  }
}
