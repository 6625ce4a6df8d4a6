import type { CheckpointArtifact, Mount } from '../sandbox/provider.js';
import type { Db } from './database.js';
import type { SessionRecord } from './session-store.js';

/** `saving`: the backend has not returned yet (never listed as done); `ready`: usable. */
export type CheckpointState = 'saving' | 'ready';

/** The three cwd layers at the moment of the checkpoint: what a restore or fork writes back. */
export interface CheckpointCwdState {
  /** Layer a: every session's own record. */
  sessions: SessionRecord[];
  /** Layer b: the environment's last observed cwd. */
  lastObservedCwd: string | null;
  lastObservedAt: string | null;
  /** Layer c: the declared default cwd as the sandbox declared it (null: the backend's). */
  declaredDefaultCwd: string | null;
}

export interface CheckpointRecord {
  id: string;
  sandbox: string;
  backend: string;
  label: string | null;
  createdAt: string;
  state: CheckpointState;
  memory: boolean;
  sizeBytes: number | null;
  /** What the backend saved; null while `saving`. */
  artifact: CheckpointArtifact | null;
  cwd: CheckpointCwdState;
  /** The source sandbox's options, image, user, mounts and env: what a fork inherits. */
  source: { image: string | null; user: string | null; options: Record<string, string>; mounts?: Mount[]; env?: Record<string, string> };
  /** The process saving it (while `saving`): another process's live checkpoint is not an interrupted one. */
  ownerPid: number | null;
}

interface Row {
  id: string;
  sandbox: string;
  backend: string;
  label: string | null;
  created_at: string;
  state: CheckpointState;
  memory: number;
  size_bytes: number | null;
  artifact: string | null;
  cwd_state: string;
  options: string;
  owner_pid: number | null;
}

const fromRow = (r: Row): CheckpointRecord => ({
  id: r.id,
  sandbox: r.sandbox,
  backend: r.backend,
  label: r.label,
  createdAt: r.created_at,
  state: r.state,
  memory: r.memory === 1,
  sizeBytes: r.size_bytes,
  artifact: r.artifact ? (JSON.parse(r.artifact) as CheckpointArtifact) : null,
  cwd: JSON.parse(r.cwd_state) as CheckpointCwdState,
  source: JSON.parse(r.options) as CheckpointRecord['source'],
  ownerPid: r.owner_pid,
});

/** The checkpoints table. A record is inserted `saving`, and becomes `ready` only with its artifact. */
export class CheckpointStore {
  constructor(private readonly db: Db) {}

  insertSaving(rec: Omit<CheckpointRecord, 'state' | 'artifact' | 'sizeBytes' | 'ownerPid'>, ownerPid = process.pid): void {
    this.db
      .prepare(
        `INSERT INTO checkpoints (id, sandbox, backend, label, created_at, state, memory, size_bytes, artifact, cwd_state, options, owner_pid)
         VALUES (?, ?, ?, ?, ?, 'saving', ?, NULL, NULL, ?, ?, ?)`,
      )
      .run(
        rec.id,
        rec.sandbox,
        rec.backend,
        rec.label,
        rec.createdAt,
        rec.memory ? 1 : 0,
        JSON.stringify(rec.cwd),
        JSON.stringify(rec.source),
        ownerPid,
      );
  }

  markReady(id: string, artifact: CheckpointArtifact): void {
    this.db
      .prepare(`UPDATE checkpoints SET state = 'ready', artifact = ?, size_bytes = ?, memory = ? WHERE id = ?`)
      .run(JSON.stringify(artifact), artifact.sizeBytes, artifact.memory ? 1 : 0, id);
  }

  get(id: string): CheckpointRecord | undefined {
    const row = this.db.prepare(`SELECT * FROM checkpoints WHERE id = ?`).get(id) as Row | undefined;
    return row ? fromRow(row) : undefined;
  }

  /** Ready checkpoints, newest first; of one sandbox when given. `saving` ones are never listed. */
  listReady(sandbox?: string): CheckpointRecord[] {
    const rows = (
      sandbox === undefined
        ? this.db.prepare(`SELECT * FROM checkpoints WHERE state = 'ready' ORDER BY created_at DESC, id`).all()
        : this.db.prepare(`SELECT * FROM checkpoints WHERE state = 'ready' AND sandbox = ? ORDER BY created_at DESC, id`).all(sandbox)
    ) as Row[];
    return rows.map(fromRow);
  }

  /** Records left `saving` (an app killed mid-checkpoint, or one still under way in another process). */
  listSaving(): CheckpointRecord[] {
    return (this.db.prepare(`SELECT * FROM checkpoints WHERE state = 'saving'`).all() as Row[]).map(fromRow);
  }

  /** The backends that have checkpoints here (a removed sandbox's checkpoints stay). */
  backends(): string[] {
    return (this.db.prepare(`SELECT DISTINCT backend FROM checkpoints`).all() as Array<{ backend: string }>).map((r) => r.backend);
  }

  ids(): string[] {
    return (this.db.prepare(`SELECT id FROM checkpoints`).all() as Array<{ id: string }>).map((r) => r.id);
  }

  delete(id: string): boolean {
    return this.db.prepare(`DELETE FROM checkpoints WHERE id = ?`).run(id).changes > 0;
  }
}
