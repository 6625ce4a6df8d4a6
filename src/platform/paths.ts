import { homedir } from 'node:os';
import { join } from 'node:path';
import { resolveDataDir } from './data-dir.js';

/**
 * Where Sandbox Desk keeps what, following the XDG base directories:
 *
 * | what                       | normally                                   | with `SANDBOX_DESK_HOME=H` |
 * | ---                        | ---                                        | ---                        |
 * | data (state.db, plugins/)  | `$XDG_DATA_HOME/sandbox-desk`              | `H`                        |
 * | config (`config.json`)     | `$XDG_CONFIG_HOME/sandbox-desk`            | `H` (so `H/config.json`)   |
 * | state (the log)            | `$XDG_STATE_HOME/sandbox-desk`             | `H/logs`                   |
 *
 * `SANDBOX_DESK_HOME` puts everything under one folder so a test (or a second, throw-away instance) is
 * hermetic: it never reads the user's config nor writes the user's log. A core opened on an explicit
 * data dir (tests' `new SandboxDesk({dataDir})`) gets the same one-folder layout through `homePaths`.
 * XDG variables that are not absolute are ignored, as the spec says.
 */
export interface AppPaths {
  dataDir: string;
  configDir: string;
  /** The config file read and written by `config get|set|list`. */
  configFile: string;
  /** Before the config dir existed, config.json lived in the data dir: read when `configFile` is absent. */
  legacyConfigFile: string | null;
  stateDir: string;
  logFile: string;
}

function xdg(env: NodeJS.ProcessEnv, name: string, fallback: string[]): string {
  const v = env[name];
  return v && v.startsWith('/') ? v : join(homedir(), ...fallback);
}

/** Everything under one folder: SANDBOX_DESK_HOME, or a data dir a caller chose. */
export function homePaths(home: string): AppPaths {
  return {
    dataDir: home,
    configDir: home,
    configFile: join(home, 'config.json'),
    legacyConfigFile: null,
    stateDir: join(home, 'logs'),
    logFile: join(home, 'logs', 'sandbox-desk.log'),
  };
}

export function resolvePaths(env: NodeJS.ProcessEnv = process.env): AppPaths {
  if (env.SANDBOX_DESK_HOME) return homePaths(env.SANDBOX_DESK_HOME);
  const dataDir = resolveDataDir(env);
  const configDir = join(xdg(env, 'XDG_CONFIG_HOME', ['.config']), 'sandbox-desk');
  const stateDir = join(xdg(env, 'XDG_STATE_HOME', ['.local', 'state']), 'sandbox-desk');
  return {
    dataDir,
    configDir,
    configFile: join(configDir, 'config.json'),
    legacyConfigFile: join(dataDir, 'config.json'),
    stateDir,
    logFile: join(stateDir, 'sandbox-desk.log'),
  };
}
