import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxDeskError } from '../../shared/errors.js';
import { DEFAULT_TIMEOUTS, type CallTimeouts } from './plugin-guard.js';

export type PluginIsolation = 'in-process' | 'host';

/** `plugins` in `<data dir>/config.json`, the `plugins` option of SandboxDesk, and the CLI's flags, merged. */
export interface PluginSettings {
  isolation: PluginIsolation;
  /** Extra plugin paths (folders with a package.json, or .js modules), besides `<data dir>/plugins/`. */
  paths: string[];
  /** Per-call time limits; the isolated host also uses them to notice a hung plugin. */
  timeouts: CallTimeouts;
  /** false: do not scan `<data dir>/plugins/` (tests, or to start with only the given paths). */
  scanDataDir: boolean;
}

export type PluginSettingsInput = Partial<Omit<PluginSettings, 'timeouts'>> & { timeouts?: Partial<CallTimeouts> };

export function parseIsolation(v: unknown, where: string): PluginIsolation {
  if (v === 'in-process' || v === 'host') return v;
  // Accept Hermes' spelling too; anything else is a mistake worth stopping for.
  if (v === 'in_process') return 'in-process';
  throw new SandboxDeskError('invalid_input', `${where} must be "in-process" or "host", got ${JSON.stringify(v)}`, {
    hint: '"host" runs each plugin in its own child process; "in-process" runs it inside the app',
  });
}

/** Reads `plugins` from `<data dir>/config.json`. A missing file is no settings; a broken one is an error that says where. */
export function readConfigPlugins(dataDir: string): PluginSettingsInput {
  const file = join(dataDir, 'config.json');
  if (!existsSync(file)) return {};
  let cfg: unknown;
  try {
    cfg = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new SandboxDeskError('invalid_input', `${file} is not valid JSON: ${(err as Error).message}`, { hint: 'fix or remove the file' });
  }
  const p = (cfg as { plugins?: unknown } | null)?.plugins;
  if (p === undefined) return {};
  if (!p || typeof p !== 'object') throw new SandboxDeskError('invalid_input', `${file}: "plugins" must be an object`);
  const o = p as Record<string, unknown>;
  const out: PluginSettingsInput = {};
  if (o.isolation !== undefined) out.isolation = parseIsolation(o.isolation, `${file}: plugins.isolation`);
  if (o.paths !== undefined) {
    if (!Array.isArray(o.paths) || !o.paths.every((x) => typeof x === 'string')) throw new SandboxDeskError('invalid_input', `${file}: plugins.paths must be an array of paths`);
    out.paths = o.paths;
  }
  if (o.timeouts && typeof o.timeouts === 'object') {
    const t = o.timeouts as Record<string, unknown>;
    out.timeouts = {};
    if (typeof t.shortMs === 'number' && t.shortMs > 0) out.timeouts.shortMs = t.shortMs;
    if (typeof t.longMs === 'number' && t.longMs > 0) out.timeouts.longMs = t.longMs;
  }
  return out;
}

/** Later layers win for scalars; paths add up (config's, then the caller's). */
export function mergeSettings(...layers: PluginSettingsInput[]): PluginSettings {
  const s: PluginSettings = { isolation: 'in-process', paths: [], timeouts: { ...DEFAULT_TIMEOUTS }, scanDataDir: true };
  for (const l of layers) {
    if (l.isolation) s.isolation = l.isolation;
    if (l.paths) s.paths.push(...l.paths);
    if (l.timeouts) s.timeouts = { ...s.timeouts, ...l.timeouts };
    if (l.scanDataDir !== undefined) s.scanDataDir = l.scanDataDir;
  }
  return s;
}
