import type { Mount } from '../sandbox/provider.js';
import type { Db } from './database.js';

export interface SandboxRecord {
  name: string;
  backend: string;
  image: string | null;
  user: string | null;
  /** What was declared for this sandbox: an absolute in-sandbox path, `"~"`, or null (use the backend's). */
  declaredDefaultCwd: string | null;
  /** The default cwd exactly as typed at create; null when none was given. Optional: older callers omit it. */
  typedDefaultCwd?: string | null;
  backendRef: string | null;
  mounts: Mount[];
  env: Record<string, string>;
  options: Record<string, string>;
  createdAt: string;
  /** The user's home measured after the last connect, and the incarnation it was measured in. */
  home: string | null;
  homeIncarnation: string | null;
  /** The environment's last observed cwd (layer b): shared, never inherited by a session. */
  lastObservedCwd: string | null;
  lastObservedAt: string | null;
}

interface Row {
  name: string;
  backend: string;
  image: string | null;
  user: string | null;
  declared_default_cwd: string | null;
  typed_default_cwd: string | null;
  backend_ref: string | null;
  mounts: string;
  env: string;
  options: string;
  created_at: string;
  home: string | null;
  home_incarnation: string | null;
  last_observed_cwd: string | null;
  last_observed_at: string | null;
}

function fromRow(r: Row): SandboxRecord {
  return {
    name: r.name,
    backend: r.backend,
    image: r.image,
    user: r.user,
    declaredDefaultCwd: r.declared_default_cwd,
    typedDefaultCwd: r.typed_default_cwd,
    backendRef: r.backend_ref,
    mounts: JSON.parse(r.mounts) as Mount[],
    env: JSON.parse(r.env) as Record<string, string>,
    options: JSON.parse(r.options) as Record<string, string>,
    createdAt: r.created_at,
    home: r.home,
    homeIncarnation: r.home_incarnation,
    lastObservedCwd: r.last_observed_cwd,
    lastObservedAt: r.last_observed_at,
  };
}

/** The sandboxes table. Each method is one statement or one transaction. */
export class SandboxStore {
  constructor(private readonly db: Db) {}

  insert(rec: SandboxRecord): void {
    this.db
      .prepare(
        `INSERT INTO sandboxes (name, backend, image, user, declared_default_cwd, typed_default_cwd, backend_ref, mounts, env, options, created_at, home, home_incarnation, last_observed_cwd, last_observed_at)
         VALUES (@name, @backend, @image, @user, @declaredDefaultCwd, @typedDefaultCwd, @backendRef, @mounts, @env, @options, @createdAt, @home, @homeIncarnation, @lastObservedCwd, @lastObservedAt)`,
      )
      .run({
        ...rec,
        typedDefaultCwd: rec.typedDefaultCwd ?? null,
        mounts: JSON.stringify(rec.mounts),
        env: JSON.stringify(rec.env),
        options: JSON.stringify(rec.options),
      });
  }

  get(name: string): SandboxRecord | undefined {
    const row = this.db.prepare(`SELECT * FROM sandboxes WHERE name = ?`).get(name) as Row | undefined;
    return row ? fromRow(row) : undefined;
  }

  /** The user's sandboxes: a pooled one waiting to be claimed (pool_members) is nobody's yet and is left out. */
  list(): SandboxRecord[] {
    return (
      this.db
        .prepare(`SELECT * FROM sandboxes WHERE name NOT IN (SELECT sandbox FROM pool_members) ORDER BY created_at, name`)
        .all() as Row[]
    ).map(fromRow);
  }

  setProvisioned(name: string, fields: { backendRef: string | null; user: string | null; image: string | null }): void {
    this.db
      .prepare(`UPDATE sandboxes SET backend_ref = ?, user = ?, image = ? WHERE name = ?`)
      .run(fields.backendRef, fields.user, fields.image, name);
  }

  setDeclaredDefaultCwd(name: string, value: string | null): void {
    this.db.prepare(`UPDATE sandboxes SET declared_default_cwd = ? WHERE name = ?`).run(value, name);
  }

  setHome(name: string, home: string, incarnation: string): void {
    this.db.prepare(`UPDATE sandboxes SET home = ?, home_incarnation = ? WHERE name = ?`).run(home, incarnation, name);
  }

  setLastObservedCwd(name: string, cwd: string, at: string): void {
    this.db.prepare(`UPDATE sandboxes SET last_observed_cwd = ?, last_observed_at = ? WHERE name = ?`).run(cwd, at, name);
  }

  /** A restore or fork: the environment's last observed cwd and the declared default as a checkpoint had them. */
  restoreCwdLayers(
    name: string,
    layers: { lastObservedCwd: string | null; lastObservedAt: string | null; declaredDefaultCwd: string | null },
  ): void {
    this.db
      .prepare(`UPDATE sandboxes SET last_observed_cwd = ?, last_observed_at = ?, declared_default_cwd = ? WHERE name = ?`)
      .run(layers.lastObservedCwd, layers.lastObservedAt, layers.declaredDefaultCwd, name);
  }

  /** Removes the sandbox and, through the foreign key, its sessions. */
  delete(name: string): boolean {
    return this.db.prepare(`DELETE FROM sandboxes WHERE name = ?`).run(name).changes > 0;
  }
}
