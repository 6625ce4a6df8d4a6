/**
 * The fast path of `sandbox-desk exec` (issue 34: the CLI as fast as `docker exec`). The full CLI loads
 * commander, its whole command tree, zod (the config schema) and pino before it sends a byte — about
 * 0.25 s of module loading on this project's CI machine, against ~0.1 s for `node -e 0`. An agent runs
 * `exec NAME -- COMMAND` thousands of times, so that one shape skips all of it.
 *
 * It is deliberately not a second parser of exec's options: it recognises only the exact plain shape
 * `exec NAME [--session S] [--workdir D] [--timeout N] [--json] -- WORD…` (each option at most once, as
 * separate words, no value that starts with `-`) and answers null for anything else — `--no-shell`,
 * `--opt=value`, a global option, `--help`, no `--`, a repeated option — which bin/sandbox-desk.js then
 * hands to the full parser (main.ts). What the recognised flags mean is runExec's (exec-command.ts),
 * shared with commander's `exec` action. test/ for this path: fast-exec.test.ts (what it loads).
 */
import { existsSync, readFileSync } from 'node:fs';
import { connectLazily } from '../client/connect.js';
import { resolvePaths, type AppPaths } from '../platform/paths.js';
import { runExec, type ExecFlags } from './exec-command.js';
import { printError, processOut, type Out } from './output.js';

const VALUE_FLAGS = { '--session': 'session', '--workdir': 'workdir', '--timeout': 'timeout' } as const;

export interface PlainExec {
  name: string;
  words: string[];
  flags: ExecFlags;
}

/** `argv` (after the program name) when it is exactly the plain exec shape; null: let commander parse it. */
export function plainExec(argv: readonly string[]): PlainExec | null {
  if (argv[0] !== 'exec') return null;
  const name = argv[1];
  if (name === undefined || name === '' || name.startsWith('-')) return null;
  const flags: ExecFlags = { shell: true };
  const seen = new Set<string>();
  let i = 2;
  for (; i < argv.length && argv[i] !== '--'; i++) {
    const word = argv[i]!;
    if (seen.has(word)) return null;
    seen.add(word);
    if (word === '--json') {
      flags.json = true;
      continue;
    }
    if (!Object.hasOwn(VALUE_FLAGS, word)) return null;
    const value = argv[++i];
    if (value === undefined || value === '' || value.startsWith('-')) return null;
    flags[VALUE_FLAGS[word as keyof typeof VALUE_FLAGS]] = value;
  }
  const words = argv.slice(i + 1);
  if (i >= argv.length || words.length === 0) return null;
  return { name, words, flags };
}

const QUIET_LEVELS = new Set(['info', 'warn', 'error', 'fatal', 'silent']);

/**
 * Whether the CLI log would write nothing for a successful exec (its lines are `debug`), so skipping
 * the log — pino and the config schema — loses nothing. Any doubt (a config file that does not parse,
 * a level of debug or trace, a config in the legacy place, which the full path warns about) answers
 * false: the full path then reads, validates and reports the config as always.
 */
export function logQuietFor(paths: AppPaths): boolean {
  if (!existsSync(paths.configFile)) return paths.legacyConfigFile === null || !existsSync(paths.legacyConfigFile);
  try {
    const raw = JSON.parse(readFileSync(paths.configFile, 'utf8')) as { log?: { level?: unknown } } | null;
    const level = raw?.log?.level;
    return level === undefined || (typeof level === 'string' && QUIET_LEVELS.has(level));
  } catch {
    return false;
  }
}

/** A failed command is logged as the full path logs it: the log (pino, the config) loads only then. */
async function logFailure(paths: AppPaths, err: unknown): Promise<void> {
  const [{ openCliLog }, { ConfigFile }, { SandboxDeskError }] = await Promise.all([
    import('./cli-log.js'),
    import('./config-command.js'),
    import('../shared/errors.js'),
  ]);
  const log = openCliLog(paths, new ConfigFile(paths), {});
  log.logger.warn({ err: err instanceof SandboxDeskError ? err.toJSON() : { message: String(err) } }, 'command failed');
  log.dispose();
}

/**
 * Runs a plain `exec` and returns its exit code, or null when `argv` is not the plain shape (or the log
 * must be written): the caller then runs the full CLI, which parses everything from scratch.
 */
export async function fastExec(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  out: Out = processOut,
): Promise<number | null> {
  const plain = plainExec(argv);
  if (!plain) return null;
  const paths = resolvePaths(env);
  if (!logQuietFor(paths)) return null;
  let opened: ReturnType<typeof connectLazily> | null = null;
  try {
    return await runExec(() => (opened ??= connectLazily({ env })), out, plain.name, plain.words, plain.flags);
  } catch (err) {
    await logFailure(paths, err).catch(() => undefined);
    return printError(out, err, plain.flags.json === true);
  } finally {
    if (opened) await (await (opened as ReturnType<typeof connectLazily>).catch(() => null))?.close();
  }
}
