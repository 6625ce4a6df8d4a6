import { mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * Where Sandbox Desk keeps its state: `$SANDBOX_DESK_HOME` when set (tests use a temp dir), else
 * `$XDG_DATA_HOME/sandbox-desk`, else `~/.local/share/sandbox-desk`. Created 0700 on first use.
 */
export function resolveDataDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SANDBOX_DESK_HOME) return env.SANDBOX_DESK_HOME;
  const xdg = env.XDG_DATA_HOME && env.XDG_DATA_HOME.startsWith('/') ? env.XDG_DATA_HOME : join(homedir(), '.local', 'share');
  return join(xdg, 'sandbox-desk');
}

export function ensureDataDir(dir: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}
