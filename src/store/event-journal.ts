import type { Db } from './database.js';

/** Rows kept: enough for a tailer that polls every 100 ms to never miss one under any real load. */
const KEEP = 2000;
/** Pruned every this many appends (one DELETE, not one per row). */
const PRUNE_EVERY = 200;

export interface JournalRow {
  id: number;
  origin: string;
  event: string;
}

/**
 * Every process's events in one table, so the process serving a window learns what a CLI or MCP
 * server on the same data directory did (it tails the rows other origins wrote). Opaque JSON here:
 * the store does not know the event vocabulary (src/shared/core-events.ts does).
 */
export class EventJournal {
  private appended = 0;

  constructor(private readonly db: Db) {}

  append(origin: string, event: string): number {
    return this.appendMany(origin, [event]);
  }

  /** Several events in one transaction (a command's record, cwd and receipt: one commit, not three). */
  appendMany(origin: string, events: readonly string[]): number {
    const insert = this.db.prepare(`INSERT INTO event_journal (origin, event) VALUES (?, ?)`);
    let id = 0;
    this.db.transaction(() => {
      for (const e of events) id = Number(insert.run(origin, e).lastInsertRowid);
    })();
    const before = this.appended;
    this.appended += events.length;
    if (Math.floor(before / PRUNE_EVERY) !== Math.floor(this.appended / PRUNE_EVERY))
      this.db.prepare(`DELETE FROM event_journal WHERE id <= ?`).run(id - KEEP);
    return id;
  }

  /** The newest row's id (0 when empty): a tailer starts after it. */
  lastId(): number {
    return (this.db.prepare(`SELECT COALESCE(MAX(id), 0) AS id FROM event_journal`).get() as { id: number }).id;
  }

  /** Rows after `afterId` written by anyone but `origin`, oldest first. */
  foreignSince(afterId: number, origin: string, limit = 500): JournalRow[] {
    return this.db
      .prepare(`SELECT id, origin, event FROM event_journal WHERE id > ? AND origin != ? ORDER BY id LIMIT ?`)
      .all(afterId, origin, limit) as JournalRow[];
  }

  /**
   * SQLite's `data_version`: it changes when ANOTHER connection committed to the file since the last
   * read, never for this connection's own writes — a cheap "did anyone else write?" for the tailer.
   */
  dataVersion(): number {
    return this.db.pragma('data_version', { simple: true }) as number;
  }
}
