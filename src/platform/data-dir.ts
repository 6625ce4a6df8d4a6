import { mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { dataDirFromEnv } from '../shared/service-paths.js';

/**
 * Where Sandbox Desk keeps its state: `$SANDBOX_DESK_HOME` when set (tests use a temp dir), else
 * `$XDG_DATA_HOME/sandbox-desk`, else `~/.local/share/sandbox-desk`. Created 0700 on first use. The rule
 * itself is in src/shared/service-paths.ts, where the service's clients (which import only `shared`)
 * find the same directory.
 */
export function resolveDataDir(env: NodeJS.ProcessEnv = process.env): string {
  return dataDirFromEnv(env, homedir());
}

export function ensureDataDir(dir: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}
