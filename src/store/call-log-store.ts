import type { Db } from './database.js';
import type { CallLogEntry } from '../shared/call-log-types.js';

export type { CallLogEntry } from '../shared/call-log-types.js';

interface Row {
  id: number;
  at: string;
  sandbox: string | null;
  session: string | null;
  tool: string;
  cwd_used: string | null;
  cwd_observed: string | null;
  exit_code: number | null;
  warnings: string;
  error: string | null;
  duration_ms: number | null;
}

const fromRow = (r: Row): CallLogEntry => ({
  id: r.id,
  at: r.at,
  sandbox: r.sandbox,
  session: r.session,
  tool: r.tool,
  cwdUsed: r.cwd_used,
  cwdObserved: r.cwd_observed,
  exitCode: r.exit_code,
  warnings: JSON.parse(r.warnings) as CallLogEntry['warnings'],
  error: r.error,
  durationMs: r.duration_ms,
});

/** Append-only log of agent calls: the receipt of what happened, not an inference. */
export class CallLogStore {
  constructor(private readonly db: Db) {}

  append(e: Omit<CallLogEntry, 'id'>): number {
    return Number(
      this.db
        .prepare(
          `INSERT INTO call_log (at, sandbox, session, tool, cwd_used, cwd_observed, exit_code, warnings, error, duration_ms)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(e.at, e.sandbox, e.session, e.tool, e.cwdUsed, e.cwdObserved, e.exitCode, JSON.stringify(e.warnings), e.error, e.durationMs)
        .lastInsertRowid,
    );
  }

  /** The last `limit`, newest last; filtered by sandbox and session when given, and to ids below `beforeId` (paging back). */
  list(
    filter: {
      sandbox?: string | undefined;
      session?: string | undefined;
      limit?: number | undefined;
      beforeId?: number | undefined;
    } = {},
  ): CallLogEntry[] {
    const rows = this.db
      .prepare(
        `SELECT * FROM (SELECT * FROM call_log
           WHERE (@sandbox IS NULL OR sandbox = @sandbox) AND (@session IS NULL OR session = @session)
             AND (@before IS NULL OR id < @before)
           ORDER BY id DESC LIMIT @limit) ORDER BY id`,
      )
      .all({
        sandbox: filter.sandbox ?? null,
        session: filter.session ?? null,
        before: filter.beforeId ?? null,
        limit: filter.limit ?? 1000,
      }) as Row[];
    return rows.map(fromRow);
  }
}
