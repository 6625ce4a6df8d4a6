import { SandboxDeskError } from '../shared/errors.js';
import type { SessionRecord, SessionStore } from '../store/session-store.js';

/**
 * Creates a session, optionally as a child of another. The child receives its cwd now — the explicit
 * one, else the parent's current record — and never looks the parent up again.
 */
export function createChildSession(
  sessions: SessionStore,
  req: { sandbox: string; key: string; parent?: string | undefined; cwd?: string | undefined },
  at = new Date().toISOString(),
): SessionRecord {
  if (sessions.get(req.sandbox, req.key)) {
    throw new SandboxDeskError('name_taken', `session ${JSON.stringify(req.key)} already exists in sandbox ${req.sandbox}`);
  }
  let cwd = req.cwd ?? null;
  if (req.parent !== undefined) {
    const parent = sessions.get(req.sandbox, req.parent);
    if (!parent)
      throw new SandboxDeskError('not_found', `parent session ${JSON.stringify(req.parent)} does not exist in sandbox ${req.sandbox}`);
    cwd ??= parent.cwd;
  }
  return sessions.ensure(req.sandbox, req.key, { parent: req.parent ?? null, cwd, at });
}
