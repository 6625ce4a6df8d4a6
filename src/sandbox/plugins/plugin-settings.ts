import { SandboxDeskError } from '../../shared/errors.js';
import { DEFAULT_TIMEOUTS, type CallTimeouts } from './plugin-guard.js';

export type PluginIsolation = 'in-process' | 'host';

/** `plugins` of config.json, the `plugins` option of SandboxDesk, and the CLI's flags, merged. */
export interface PluginSettings {
  isolation: PluginIsolation;
  /** Extra plugin paths (folders with a package.json, or .js modules), besides `<data dir>/plugins/`. */
  paths: string[];
  /** Per-call time limits; the isolated host also uses them to notice a hung plugin. */
  timeouts: CallTimeouts;
  /** false: do not scan `<data dir>/plugins/` (tests, or to start with only the given paths). */
  scanDataDir: boolean;
  /** Load the plugins that ship with the app (`plugins/ssh`, `plugins/podman` of the package). */
  builtin: boolean;
  /** Plugins not loaded (nor listed), by name: `sandbox-desk-ssh`, or `ssh` for short. */
  disabled: string[];
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

/** The `plugins` section of the config (already validated by its schema) as the first settings layer. */
export function settingsFromConfig(p: {
  isolation: PluginIsolation;
  paths: string[];
  disabled: string[];
  builtin: boolean;
  timeouts: CallTimeouts;
}): PluginSettingsInput {
  return { isolation: p.isolation, paths: [...p.paths], disabled: [...p.disabled], builtin: p.builtin, timeouts: { ...p.timeouts } };
}

/** True when `name` (as written by the user: `ssh` or `sandbox-desk-ssh`) names the plugin `pluginName`. */
export function namesPlugin(name: string, pluginName: string): boolean {
  return name === pluginName || `sandbox-desk-${name}` === pluginName;
}

/** Later layers win for scalars; paths and disabled names add up (config's, then the caller's). */
export function mergeSettings(...layers: PluginSettingsInput[]): PluginSettings {
  const s: PluginSettings = {
    isolation: 'in-process',
    paths: [],
    timeouts: { ...DEFAULT_TIMEOUTS },
    scanDataDir: true,
    builtin: true,
    disabled: [],
  };
  for (const l of layers) {
    if (l.isolation) s.isolation = l.isolation;
    if (l.paths) s.paths.push(...l.paths);
    if (l.disabled) s.disabled.push(...l.disabled);
    if (l.builtin !== undefined) s.builtin = l.builtin;
    if (l.timeouts) s.timeouts = { ...s.timeouts, ...l.timeouts };
    if (l.scanDataDir !== undefined) s.scanDataDir = l.scanDataDir;
  }
  return s;
}
