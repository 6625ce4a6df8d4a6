import type { NetworkMode, NetworkPolicy } from '../shared/network-policy.js';
import type { Db } from './database.js';

/**
 * Each sandbox's network policy. Its own table, made here with IF NOT EXISTS rather than by a numbered
 * migration, so it merges beside other work that appends migrations; a sandbox without a row is `open`.
 */
export class NetworkPolicyStore {
  constructor(private readonly db: Db) {
    db.exec(`CREATE TABLE IF NOT EXISTS network_policies (
      sandbox TEXT PRIMARY KEY,
      mode TEXT NOT NULL,
      allow TEXT NOT NULL DEFAULT '[]',
      updated_at TEXT NOT NULL
    )`);
  }

  get(sandbox: string): NetworkPolicy {
    const row = this.db.prepare(`SELECT mode, allow FROM network_policies WHERE sandbox = ?`).get(sandbox) as
      { mode: NetworkMode; allow: string } | undefined;
    return row ? { mode: row.mode, allow: JSON.parse(row.allow) as string[] } : { mode: 'open', allow: [] };
  }

  set(sandbox: string, policy: NetworkPolicy): void {
    this.db
      .prepare(
        `INSERT INTO network_policies (sandbox, mode, allow, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT(sandbox) DO UPDATE SET mode = excluded.mode, allow = excluded.allow, updated_at = excluded.updated_at`,
      )
      .run(sandbox, policy.mode, JSON.stringify(policy.allow), new Date().toISOString());
  }

  delete(sandbox: string): void {
    this.db.prepare(`DELETE FROM network_policies WHERE sandbox = ?`).run(sandbox);
  }

  /** Every policy that is not the default, by sandbox (what the egress proxy serves). */
  all(): Record<string, NetworkPolicy> {
    const rows = this.db.prepare(`SELECT sandbox, mode, allow FROM network_policies`).all() as Array<{
      sandbox: string;
      mode: NetworkMode;
      allow: string;
    }>;
    return Object.fromEntries(rows.map((r) => [r.sandbox, { mode: r.mode, allow: JSON.parse(r.allow) as string[] }]));
  }
}
