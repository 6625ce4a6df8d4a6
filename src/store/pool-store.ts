import type { Db } from './database.js';

/** `filling`: being made (not to be handed out); `ready`: running, waiting for a claim. */
export type PoolMemberState = 'filling' | 'ready';

export interface PoolMember {
  /** The hidden sandbox row's name. */
  sandbox: string;
  /** The template key (src/pool/pool-template.ts). */
  template: string;
  state: PoolMemberState;
  /** The image the container was made from, as the engine's id. */
  imageId: string | null;
  createdAt: string;
}

interface Row {
  sandbox: string;
  template: string;
  state: PoolMemberState;
  image_id: string | null;
  created_at: string;
}

const fromRow = (r: Row): PoolMember => ({
  sandbox: r.sandbox,
  template: r.template,
  state: r.state,
  imageId: r.image_id,
  createdAt: r.created_at,
});

/** What a claim writes into the sandbox row as it becomes the user's. */
export interface ClaimFields {
  name: string;
  declaredDefaultCwd: string | null;
  typedDefaultCwd: string | null;
  /** null: keep the user the pooled sandbox was made with (and the home measured for it). */
  user: string | null;
  /** What the user asked (the template's limits), in place of the idle caps the pooled sandbox was made with. */
  options: Record<string, string>;
  createdAt: string;
}

/** The pool_members table: which hidden sandbox rows belong to which pool. */
export class PoolStore {
  constructor(private readonly db: Db) {}

  /** Adds a pooled sandbox's membership (its `sandboxes` row must exist). */
  add(sandbox: string, template: string, createdAt: string): void {
    this.db
      .prepare(`INSERT INTO pool_members (sandbox, template, state, image_id, created_at) VALUES (?, ?, 'filling', NULL, ?)`)
      .run(sandbox, template, createdAt);
  }

  markReady(sandbox: string, imageId: string | null): void {
    this.db.prepare(`UPDATE pool_members SET state = 'ready', image_id = ? WHERE sandbox = ?`).run(imageId, sandbox);
  }

  get(sandbox: string): PoolMember | undefined {
    const r = this.db.prepare(`SELECT * FROM pool_members WHERE sandbox = ?`).get(sandbox) as Row | undefined;
    return r ? fromRow(r) : undefined;
  }

  isMember(sandbox: string): boolean {
    return this.db.prepare(`SELECT 1 FROM pool_members WHERE sandbox = ?`).get(sandbox) !== undefined;
  }

  /** Every member (of one template when given), the oldest first. */
  list(template?: string): PoolMember[] {
    const rows = (
      template === undefined
        ? this.db.prepare(`SELECT * FROM pool_members ORDER BY created_at, sandbox`).all()
        : this.db.prepare(`SELECT * FROM pool_members WHERE template = ? ORDER BY created_at, sandbox`).all(template)
    ) as Row[];
    return rows.map(fromRow);
  }

  /**
   * The claim, one transaction: the membership goes (only if the member is still `ready` — of two
   * claims racing for it exactly one finds the row) and the sandbox row takes the user's name and
   * settings. False: someone else claimed it first, or it was dropped; nothing was written.
   * A name already taken makes the UPDATE fail and the whole transaction roll back: still the pool's.
   */
  claim(member: string, fields: ClaimFields): boolean {
    return this.db.transaction(() => {
      if (this.db.prepare(`DELETE FROM pool_members WHERE sandbox = ? AND state = 'ready'`).run(member).changes !== 1) return false;
      // Whatever the pool's own work left under the member's name (nothing a user could have made).
      this.db.prepare(`DELETE FROM sessions WHERE sandbox = ?`).run(member);
      this.db.prepare(`DELETE FROM leases WHERE sandbox = ?`).run(member);
      this.db
        .prepare(
          `UPDATE sandboxes SET name = @name, declared_default_cwd = @declaredDefaultCwd, typed_default_cwd = @typedDefaultCwd,
             user = COALESCE(@user, user), created_at = @createdAt, options = @options,
             home = CASE WHEN @user IS NULL THEN home ELSE NULL END,
             home_incarnation = CASE WHEN @user IS NULL THEN home_incarnation ELSE NULL END
           WHERE name = @member`,
        )
        .run({ ...fields, options: JSON.stringify(fields.options), member });
      return true;
    })();
  }

  /** Drops a membership (its sandbox row is removed by the caller, or by the cascade). */
  remove(sandbox: string): void {
    this.db.prepare(`DELETE FROM pool_members WHERE sandbox = ?`).run(sandbox);
  }
}
