import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigSchema, DEFAULT_CONFIG, type Config } from '../platform/config.js';
import { openLog, type AppLog, type LogLevel } from '../platform/log.js';
import type { AppPaths } from '../platform/paths.js';
import { projectRoot } from '../platform/project-root.js';
import { SandboxDeskError } from '../shared/errors.js';
import type { ConfigFile } from './config-command.js';

/** The version in the package's own package.json (what `--version` prints). */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(projectRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

export interface CliLog extends AppLog {
  /** The config read for this command; null when the file is broken (the core then reports why). */
  config: Config | null;
}

const LEVELS = ConfigSchema.shape.log.unwrap().shape.level.unwrap().options as readonly LogLevel[];

/** `--debug` / `--log-level` over config `log.level`: the level, or a clear error naming the choices. */
export function logLevelOf(opts: { debug?: boolean; logLevel?: string }, configured: LogLevel): LogLevel {
  if (opts.debug) return 'debug';
  if (opts.logLevel === undefined) return configured;
  if ((LEVELS as readonly string[]).includes(opts.logLevel)) return opts.logLevel as LogLevel;
  throw new SandboxDeskError('invalid_input', `--log-level must be one of ${LEVELS.join(', ')}, got ${JSON.stringify(opts.logLevel)}`, {
    hint: 'or use --debug for debug',
  });
}

/**
 * The log of one CLI command. A broken config file does not stop the command (the core runs on
 * defaults and `plugin list` says why; `config …` commands show the error): the log then uses the
 * default size limits, and says so.
 */
export function openCliLog(paths: AppPaths, configFile: ConfigFile, opts: { debug?: boolean; logLevel?: string }): CliLog {
  let config: Config | null = null;
  let problem: string | null = null;
  try {
    config = configFile.load().config;
  } catch (err) {
    problem = err instanceof Error ? err.message : String(err);
  }
  const c = config ?? DEFAULT_CONFIG;
  const level = logLevelOf(opts, c.log.level);
  const log = openLog({ file: paths.logFile, level, maxBytes: c.log.maxBytes, files: c.log.files, component: 'cli' });
  if (problem) log.logger.error({ err: problem }, 'config not usable');
  return Object.assign(log, { config });
}
