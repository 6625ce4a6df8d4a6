import { createHash, randomBytes } from 'node:crypto';
import type { AgentTokenInfo } from '../shared/agent-scope.js';
import type { Db } from './database.js';

/** Every agent token starts with this, so a leaked one is recognisable (and never taken for the UI's). */
export const AGENT_TOKEN_PREFIX = 'sdat_';

export type { AgentTokenInfo };

interface Row {
  id: string;
  label: string | null;
  sandboxes: string | null;
  created_at: string;
  last_used_at: string | null;
}

/** SHA-256 is enough: the secret is 256 random bits, so there is nothing to brute-force slowly. */
export function hashAgentToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** A fresh agent token: the prefix, a short public id, and 256 random bits. */
export function mintAgentToken(): { id: string; token: string } {
  const id = randomBytes(4).toString('hex');
  return { id, token: `${AGENT_TOKEN_PREFIX}${id}_${randomBytes(32).toString('base64url')}` };
}

/**
 * The persisted agent tokens (`sandbox-desk token create/list/rm`). Only hashes are stored; the
 * secret is shown once, when it is made. The running server looks tokens up here on every request,
 * so a token made or removed by the CLI counts at once.
 */
export class AgentTokenStore {
  constructor(private readonly db: Db) {}

  create(opts: { label?: string | null; sandboxes?: string[] | null; at?: string } = {}): { token: string; info: AgentTokenInfo } {
    const { id, token } = mintAgentToken();
    const createdAt = opts.at ?? new Date().toISOString();
    const sandboxes = opts.sandboxes && opts.sandboxes.length ? [...new Set(opts.sandboxes)] : null;
    this.db
      .prepare(`INSERT INTO agent_tokens (id, hash, label, sandboxes, created_at) VALUES (?, ?, ?, ?, ?)`)
      .run(id, hashAgentToken(token), opts.label ?? null, sandboxes ? JSON.stringify(sandboxes) : null, createdAt);
    return { token, info: { id, label: opts.label ?? null, scope: { tools: 'mcp', sandboxes }, createdAt, lastUsedAt: null } };
  }

  /** The token's record, or null; marks it used. */
  verify(token: string): AgentTokenInfo | null {
    if (!token.startsWith(AGENT_TOKEN_PREFIX)) return null;
    const row = this.db
      .prepare(`SELECT id, label, sandboxes, created_at, last_used_at FROM agent_tokens WHERE hash = ?`)
      .get(hashAgentToken(token)) as Row | undefined;
    if (!row) return null;
    this.db.prepare(`UPDATE agent_tokens SET last_used_at = ? WHERE id = ?`).run(new Date().toISOString(), row.id);
    return toInfo(row);
  }

  list(): AgentTokenInfo[] {
    return (
      this.db.prepare(`SELECT id, label, sandboxes, created_at, last_used_at FROM agent_tokens ORDER BY created_at, id`).all() as Row[]
    ).map(toInfo);
  }

  /** Removes a token by its id (or its label); false when none matched. */
  remove(idOrLabel: string): boolean {
    return this.db.prepare(`DELETE FROM agent_tokens WHERE id = ? OR label = ?`).run(idOrLabel, idOrLabel).changes > 0;
  }
}

function toInfo(row: Row): AgentTokenInfo {
  let sandboxes: string[] | null = null;
  if (row.sandboxes !== null) {
    try {
      const v = JSON.parse(row.sandboxes) as unknown;
      // An unreadable scope fails closed: no sandbox at all, never every sandbox.
      sandboxes = Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : [];
    } catch {
      sandboxes = [];
    }
  }
  return { id: row.id, label: row.label, scope: { tools: 'mcp', sandboxes }, createdAt: row.created_at, lastUsedAt: row.last_used_at };
}
