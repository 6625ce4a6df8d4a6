import type { OperationView } from '../shared/core-events.js';
import type { Db } from './database.js';

/** Finished operations kept (the task list shows the recent ones); running ones are never pruned. */
const KEEP_FINISHED = 200;

interface Row {
  id: string;
  kind: string;
  target: string;
  sandbox: string | null;
  state: OperationView['state'];
  message: string | null;
  fraction: number | null;
  error: string | null;
  started_at: string;
  updated_at: string;
  pid: number;
}

const fromRow = (r: Row): OperationView => ({
  id: r.id,
  kind: r.kind,
  target: r.target,
  sandbox: r.sandbox,
  state: r.state,
  message: r.message,
  fraction: r.fraction,
  error: r.error,
  startedAt: r.started_at,
  updatedAt: r.updated_at,
  pid: r.pid,
});

/**
 * Long operations as every process on this data directory runs them (one row each, updated as it
 * goes), so the window lists — and follows — one that a CLI or MCP server started.
 */
export class OperationStore {
  constructor(private readonly db: Db) {}

  put(op: OperationView): void {
    this.db
      .prepare(
        `INSERT INTO operations (id, kind, target, sandbox, state, message, fraction, error, started_at, updated_at, pid)
         VALUES (@id, @kind, @target, @sandbox, @state, @message, @fraction, @error, @startedAt, @updatedAt, @pid)
         ON CONFLICT(id) DO UPDATE SET state = @state, message = @message, fraction = @fraction, error = @error, updated_at = @updatedAt`,
      )
      .run(op);
    if (op.state !== 'running') this.prune();
  }

  get(id: string): OperationView | undefined {
    const r = this.db.prepare(`SELECT * FROM operations WHERE id = ?`).get(id) as Row | undefined;
    return r && fromRow(r);
  }

  /** The most recent first. */
  list(limit = 50): OperationView[] {
    return (this.db.prepare(`SELECT * FROM operations ORDER BY started_at DESC, rowid DESC LIMIT ?`).all(limit) as Row[]).map(fromRow);
  }

  /**
   * Operations left `running` by a process that is gone (a CLI killed mid-create) are marked failed,
   * so the task list does not spin for ever. `alive` says whether a pid still runs.
   */
  reapOrphans(alive: (pid: number) => boolean, now = new Date().toISOString()): OperationView[] {
    const orphans = (this.db.prepare(`SELECT * FROM operations WHERE state = 'running'`).all() as Row[])
      .map(fromRow)
      .filter((o) => !alive(o.pid));
    for (const o of orphans) {
      const ended: OperationView = { ...o, state: 'failed', error: 'the process that ran it ended before it finished', updatedAt: now };
      this.put(ended);
    }
    return orphans.map((o) => this.get(o.id)!);
  }

  private prune(): void {
    this.db
      .prepare(
        `DELETE FROM operations WHERE state != 'running' AND id NOT IN
           (SELECT id FROM operations WHERE state != 'running' ORDER BY started_at DESC LIMIT ?)`,
      )
      .run(KEEP_FINISHED);
  }
}
