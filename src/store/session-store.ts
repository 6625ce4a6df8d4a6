import type { ExecWarning } from '../shared/exec-result.js';
import type { Db } from './database.js';

/** How a session's cwd record came to be. */
export type RecordSource = 'created' | 'observed' | 'rescued';

export interface SessionRecord {
  sandbox: string;
  /** The raw key the caller used, stored verbatim. */
  key: string;
  parent: string | null;
  /** The session's own cwd record (layer a), or null. */
  cwd: string | null;
  source: RecordSource | null;
  observedAt: string | null;
  createdAt: string;
  /** The warnings of the session's last command, so the UI can show them beside the record. */
  lastWarnings: ExecWarning[];
  /** The checkpoint this record was written from by a restore or fork; null otherwise. */
  restoredFrom: string | null;
}

interface Row {
  sandbox: string;
  key: string;
  parent: string | null;
  cwd: string | null;
  source: RecordSource | null;
  observed_at: string | null;
  created_at: string;
  last_warnings: string;
  restored_from: string | null;
}

const fromRow = (r: Row): SessionRecord => ({
  sandbox: r.sandbox,
  key: r.key,
  parent: r.parent,
  cwd: r.cwd,
  source: r.source,
  observedAt: r.observed_at,
  createdAt: r.created_at,
  lastWarnings: JSON.parse(r.last_warnings) as ExecWarning[],
  restoredFrom: r.restored_from ?? null,
});

/** The key of the session a request without one uses. It has its own record, like any other session. */
export const DEFAULT_SESSION = 'default';

/**
 * Per-session cwd records, keyed by (sandbox, raw session key) — never by a collapsed environment id,
 * because the environment is shared by every session.
 */
export class SessionStore {
  constructor(private readonly db: Db) {}

  get(sandbox: string, key: string): SessionRecord | undefined {
    const row = this.db.prepare(`SELECT * FROM sessions WHERE sandbox = ? AND key = ?`).get(sandbox, key) as Row | undefined;
    return row ? fromRow(row) : undefined;
  }

  list(sandbox: string): SessionRecord[] {
    return (this.db.prepare(`SELECT * FROM sessions WHERE sandbox = ? ORDER BY created_at, key`).all(sandbox) as Row[]).map(fromRow);
  }

  /** Creates the session if it does not exist; an existing session is returned unchanged. */
  ensure(sandbox: string, key: string, init: { parent: string | null; cwd: string | null; at: string }): SessionRecord {
    this.db
      .prepare(
        `INSERT OR IGNORE INTO sessions (sandbox, key, parent, cwd, source, observed_at, created_at)
         VALUES (?, ?, ?, ?, ?, NULL, ?)`,
      )
      .run(sandbox, key, init.parent, init.cwd, init.cwd ? 'created' : null, init.at);
    return this.get(sandbox, key)!;
  }

  /** Records a cwd the session itself was measured in. */
  recordObserved(sandbox: string, key: string, cwd: string, at: string): void {
    this.db
      .prepare(`UPDATE sessions SET cwd = ?, source = 'observed', observed_at = ? WHERE sandbox = ? AND key = ?`)
      .run(cwd, at, sandbox, key);
  }

  /**
   * Fill-only rescue: a snapshot from an environment that was recreated may fill a session that has no
   * record; it never overwrites one. Returns true when it filled.
   */
  fillIfEmpty(sandbox: string, key: string, cwd: string, at: string): boolean {
    return (
      this.db
        .prepare(`UPDATE sessions SET cwd = ?, source = 'rescued', observed_at = ? WHERE sandbox = ? AND key = ? AND cwd IS NULL`)
        .run(cwd, at, sandbox, key).changes > 0
    );
  }

  setLastWarnings(sandbox: string, key: string, warnings: ExecWarning[]): void {
    this.db.prepare(`UPDATE sessions SET last_warnings = ? WHERE sandbox = ? AND key = ?`).run(JSON.stringify(warnings), sandbox, key);
  }

  /**
   * A restore or fork: the sandbox's sessions become exactly the checkpoint's (records, parents, sources),
   * each marked with the checkpoint it came from. One transaction: no mix of old and restored records.
   */
  replaceFromCheckpoint(sandbox: string, checkpointId: string, records: SessionRecord[]): void {
    this.db.transaction(() => {
      this.db.prepare(`DELETE FROM sessions WHERE sandbox = ?`).run(sandbox);
      const insert = this.db.prepare(
        `INSERT INTO sessions (sandbox, key, parent, cwd, source, observed_at, created_at, last_warnings, restored_from)
         VALUES (?, ?, ?, ?, ?, ?, ?, '[]', ?)`,
      );
      for (const r of records) insert.run(sandbox, r.key, r.parent, r.cwd, r.source, r.observedAt, r.createdAt, checkpointId);
    })();
  }

  delete(sandbox: string, key: string): boolean {
    return this.db.prepare(`DELETE FROM sessions WHERE sandbox = ? AND key = ?`).run(sandbox, key).changes > 0;
  }
}
