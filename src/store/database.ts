import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { ensureDataDir } from '../platform/data-dir.js';
import { SandboxDeskError } from '../shared/errors.js';

export type Db = Database.Database;

/**
 * Ordered schema migrations; `PRAGMA user_version` says how many have run. Append only: a released
 * migration is never edited, so every database reaches the same schema.
 */
const MIGRATIONS: string[] = [
  `CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
   CREATE TABLE sandboxes (
     name TEXT PRIMARY KEY,
     backend TEXT NOT NULL,
     image TEXT,
     user TEXT,
     declared_default_cwd TEXT,
     backend_ref TEXT,
     mounts TEXT NOT NULL DEFAULT '[]',
     env TEXT NOT NULL DEFAULT '{}',
     options TEXT NOT NULL DEFAULT '{}',
     created_at TEXT NOT NULL,
     home TEXT,
     home_incarnation TEXT,
     last_observed_cwd TEXT,
     last_observed_at TEXT
   );
   CREATE TABLE sessions (
     sandbox TEXT NOT NULL REFERENCES sandboxes(name) ON DELETE CASCADE,
     key TEXT NOT NULL,
     parent TEXT,
     cwd TEXT,
     source TEXT,
     observed_at TEXT,
     created_at TEXT NOT NULL,
     last_warnings TEXT NOT NULL DEFAULT '[]',
     PRIMARY KEY (sandbox, key)
   );`,
  `CREATE TABLE leases (
     sandbox TEXT PRIMARY KEY REFERENCES sandboxes(name) ON DELETE CASCADE,
     holder TEXT NOT NULL,
     viewer_id TEXT,
     epoch INTEGER NOT NULL,
     since TEXT NOT NULL,
     reason TEXT
   );`,
  // The receipt of every agent call. No foreign key: the log outlives the sandbox it speaks of.
  `CREATE TABLE call_log (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     at TEXT NOT NULL,
     sandbox TEXT,
     session TEXT,
     tool TEXT NOT NULL,
     cwd_used TEXT,
     cwd_observed TEXT,
     exit_code INTEGER,
     warnings TEXT NOT NULL DEFAULT '[]',
     error TEXT,
     duration_ms REAL
   );
   CREATE INDEX call_log_by_sandbox ON call_log (sandbox, session, id);`,
  // Agent tokens: only a SHA-256 of each secret is kept; `sandboxes` is a JSON array, or NULL for all.
  `CREATE TABLE agent_tokens (
     id TEXT PRIMARY KEY,
     hash TEXT NOT NULL UNIQUE,
     label TEXT,
     sandboxes TEXT,
     created_at TEXT NOT NULL,
     last_used_at TEXT
   );`,
  // The default cwd exactly as the user typed it at create (`--default-cwd`, the dialog), shown in Details
  // beside what it became; `declared_default_cwd` keeps the normalised, usable declaration.
  `ALTER TABLE sandboxes ADD COLUMN typed_default_cwd TEXT;`,
  // Checkpoints (issue 15): `state` is `saving` until the backend returned, then `ready`; the sessions'
  // cwd records and the two other cwd layers at that moment are kept as JSON beside the artifact. No
  // foreign key: a checkpoint outlives the sandbox it came from (it can still be forked).
  // sessions.restored_from: the checkpoint a session's record was written from by a restore or fork.
  `CREATE TABLE checkpoints (
     id TEXT PRIMARY KEY,
     sandbox TEXT NOT NULL,
     backend TEXT NOT NULL,
     label TEXT,
     created_at TEXT NOT NULL,
     state TEXT NOT NULL,
     memory INTEGER NOT NULL,
     size_bytes INTEGER,
     artifact TEXT,
     cwd_state TEXT NOT NULL,
     options TEXT NOT NULL DEFAULT '{}',
     owner_pid INTEGER
   );
   CREATE INDEX checkpoints_by_sandbox ON checkpoints (sandbox, created_at);
   ALTER TABLE sessions ADD COLUMN restored_from TEXT;`,
  // Long operations (create, boot, desktop start, image build…) as any process runs them, so a window
  // shows the progress of one a CLI or an MCP server started; and the journal of every process's
  // events, which the others tail (src/api/event-relay.ts). Both are pruned as they grow.
  `CREATE TABLE operations (
     id TEXT PRIMARY KEY,
     kind TEXT NOT NULL,
     target TEXT NOT NULL,
     sandbox TEXT,
     state TEXT NOT NULL,
     message TEXT,
     fraction REAL,
     error TEXT,
     started_at TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     pid INTEGER NOT NULL
   );
   CREATE INDEX operations_by_start ON operations (started_at);
   CREATE TABLE event_journal (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     origin TEXT NOT NULL,
     event TEXT NOT NULL
   );`,
  // The screen size the desktop had when a person took control from the agent ("WxH"), restored when
  // control goes back (issue 36): kept with the lease, so it outlives what the lease outlives.
  `ALTER TABLE leases ADD COLUMN agent_geometry TEXT;`,
  // Warm pools (issue 37): a pooled sandbox is a row of `sandboxes` (hidden from every list) with one
  // here naming its template. A claim deletes this row and renames the sandbox in one transaction, so a
  // sandbox is either the user's or the pool's, never both. `image_id`: the image it was made from, so
  // one of an image rebuilt since is never handed out.
  `CREATE TABLE pool_members (
     sandbox TEXT PRIMARY KEY REFERENCES sandboxes(name) ON DELETE CASCADE,
     template TEXT NOT NULL,
     state TEXT NOT NULL,
     image_id TEXT,
     created_at TEXT NOT NULL
   );
   CREATE INDEX pool_members_by_template ON pool_members (template, state, created_at);`,
];

/** The schema version this build writes: the number of migrations. */
export const SCHEMA_VERSION = MIGRATIONS.length;

export function migrate(db: Db, file = 'the database'): void {
  // IMMEDIATE takes the write lock before user_version is read, so of two processes opening a new data
  // dir at once the second waits (busy_timeout), then reads the version the first committed and runs
  // nothing — instead of both reading 0 and the second failing with "table already exists".
  db.transaction(() => {
    const current = db.pragma('user_version', { simple: true }) as number;
    if (current > MIGRATIONS.length) {
      throw new SandboxDeskError(
        'refused',
        `${file} was written by a newer Sandbox Desk (schema version ${current}; this one knows up to ${MIGRATIONS.length})`,
        {
          hint: 'run the newer Sandbox Desk, or use another data directory (SANDBOX_DESK_HOME) with this one',
        },
      );
    }
    for (let i = current; i < MIGRATIONS.length; i++) db.exec(MIGRATIONS[i]!);
    if (current < MIGRATIONS.length) db.pragma(`user_version = ${MIGRATIONS.length}`);
  }).immediate();
}

/**
 * Opens (creating if needed) the state database in `dataDir`. WAL with `synchronous = NORMAL`: a
 * transaction is all-or-nothing, and every committed one survives a crash of the app (a killed
 * process, a crash mid-write); only a power loss or OS crash can roll back the last few commits, never
 * corrupt the file. FULL would add an fsync to every command's record (~1 ms, measured), which the
 * persistent-shell fast path cannot afford.
 */
export function openDatabase(dataDir: string): Db {
  ensureDataDir(dataDir);
  const file = join(dataDir, 'state.db');
  const db = new Database(file);
  // The busy timeout first: switching to WAL takes a lock that a second process opening the same new
  // data dir would otherwise fail on at once (SQLITE_BUSY).
  db.pragma('busy_timeout = 5000');
  try {
    // SQLite does not call the busy handler where waiting could deadlock (two connections of a brand-new
    // file both upgrading their locks while switching to WAL): it answers SQLITE_BUSY at once. Such a
    // collision clears as soon as one of them commits, so it is retried, bounded.
    withBusyRetry(() => db.pragma('journal_mode = WAL'));
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    withBusyRetry(() => migrate(db, file));
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

const BUSY_RETRIES = 50;
const BUSY_PAUSE_MS = 50;

function withBusyRetry<T>(fn: () => T): T {
  for (let attempt = 1; ; attempt++) {
    try {
      return fn();
    } catch (err) {
      const busy = (err as { code?: string }).code === 'SQLITE_BUSY' || /database is locked/.test(String(err));
      if (!busy || attempt >= BUSY_RETRIES) throw err;
      // A synchronous pause: opening the database is synchronous everywhere it is called.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, BUSY_PAUSE_MS);
    }
  }
}

/** A short id unique to this data directory; it keeps resource names of two data dirs apart. */
export function instanceId(db: Db): string {
  const row = db.prepare(`SELECT value FROM meta WHERE key = 'instance_id'`).get() as { value: string } | undefined;
  if (row) return row.value;
  const id = randomBytes(3).toString('hex');
  db.prepare(`INSERT OR IGNORE INTO meta (key, value) VALUES ('instance_id', ?)`).run(id);
  return (db.prepare(`SELECT value FROM meta WHERE key = 'instance_id'`).get() as { value: string }).value;
}
