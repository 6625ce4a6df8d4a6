import type { Command } from 'commander';
import {
  CONFIG_KEYS,
  describeKey,
  getKey,
  loadConfig,
  parseValueText,
  withKey,
  writeConfigFile,
  type Config,
  type LoadedConfig,
} from '../platform/config.js';
import type { AppPaths } from '../platform/paths.js';
import { SandboxDeskError } from '../shared/errors.js';
import { printJson, type Out } from './output.js';

/**
 * The config file as the CLI edits it. `set` writes the keys the file had plus the one changed, always
 * to the new location: a config still read from the old data-dir file is moved by its first `set`.
 */
export class ConfigFile {
  constructor(
    readonly paths: AppPaths,
    private readonly onLegacy?: (m: string) => void,
  ) {}

  load(): LoadedConfig {
    return loadConfig(this.paths, this.onLegacy);
  }

  /** Sets (value given) or removes (undefined) one key; returns the config now in force. */
  change(key: string, value: ReturnType<typeof parseValueText> | undefined): { config: Config; file: string; moved: string | null } {
    const current = this.load();
    const next = withKey(current.raw, key, value);
    writeConfigFile(this.paths.configFile, next.raw);
    return { config: next.config, file: this.paths.configFile, moved: current.legacy ? current.file : null };
  }
}

function show(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** `config get|set|unset|list`: every key of the schema, its value, whether the file sets it, what is valid. */
export function addConfigCommands(
  program: Command,
  file: () => ConfigFile,
  out: Out,
  /** After a change: the running service learns of it (service-settings.ts). */
  changed: () => Promise<void> = async () => undefined,
): void {
  const config = program.command('config').description('read and change config.json (every key has a default; `config list` shows them)');

  config
    .command('list')
    .description('every key with its value in force, whether config.json sets it, and what a valid value looks like')
    .option('--json', 'machine-readable output')
    .action((o: { json?: boolean }) => {
      const loaded = file().load();
      const rows = CONFIG_KEYS.map((key) => ({
        key,
        value: getKey(loaded.config, key),
        set: getKey(loaded.raw, key) !== undefined,
        description: describeKey(key),
      }));
      if (o.json)
        return printJson(out, {
          file: loaded.file ?? file().paths.configFile,
          exists: loaded.file !== null,
          legacy: loaded.legacy,
          keys: rows,
        });
      const width = Math.max(...rows.map((r) => r.key.length));
      const where = loaded.legacy
        ? `${loaded.file} (the old place; the next \`config set\` moves it to ${file().paths.configFile})`
        : (loaded.file ?? `${file().paths.configFile} (absent: all defaults)`);
      out.stdout(`# ${where}\n`);
      for (const r of rows) out.stdout(`${r.key.padEnd(width)}  ${show(r.value)}${r.set ? '' : '  (default)'}\n`);
    });

  config
    .command('get <key>')
    .description('the value of one key (dotted, e.g. plugins.isolation)')
    .option('--json', 'machine-readable output')
    .action((key: string, o: { json?: boolean }) => {
      const loaded = file().load();
      const value = getKey(loaded.config, key);
      if (o.json) printJson(out, { key, value, set: getKey(loaded.raw, key) !== undefined });
      else out.stdout(`${show(value)}\n`);
    });

  config
    .command('set <key> <value>')
    .description('set one key; VALUE is JSON when it parses (5000, true, ["a"]), else text; refused unless valid')
    .option('--json', 'machine-readable output')
    .action(async (key: string, text: string, o: { json?: boolean }) => {
      const r = file().change(key, parseValueText(text));
      await changed();
      const value = getKey(r.config, key);
      if (o.json) return printJson(out, { key, value, file: r.file, ...(r.moved ? { movedFrom: r.moved } : {}) });
      if (r.moved) out.stderr(`note: moved the config from ${r.moved} to ${r.file}; the old file is no longer read\n`);
      out.stdout(`${key} = ${show(value)} (${r.file})\n`);
    });

  config
    .command('unset <key>')
    .description('remove one key from config.json: its default applies again')
    .option('--json', 'machine-readable output')
    .action(async (key: string, o: { json?: boolean }) => {
      const r = file().change(key, undefined);
      await changed();
      const value = getKey(r.config, key);
      if (o.json) printJson(out, { key, value, file: r.file });
      else out.stdout(`${key} = ${show(value)} (default)\n`);
    });
}

/** `plugin enable|disable NAME`: edits `plugins.disabled`; takes effect from the next start. */
export function changeDisabled(
  cf: ConfigFile,
  name: string,
  disable: boolean,
  matches: (a: string, b: string) => boolean,
): { disabled: string[]; changed: boolean } {
  if (!/^[@a-z0-9][\w.@/-]*$/i.test(name))
    throw new SandboxDeskError('invalid_input', `${JSON.stringify(name)} is not a plugin name`, {
      hint: 'use a name from `sandbox-desk plugin list`, e.g. ssh or sandbox-desk-podman',
    });
  const before = cf.load().config.plugins.disabled;
  // `ssh` and `sandbox-desk-ssh` are one plugin: enabling removes either spelling.
  const same = (d: string): boolean => d === name || matches(d, name) || matches(name, d);
  const has = before.some(same);
  if (disable === has) return { disabled: before, changed: false };
  const next = disable ? [...before, name] : before.filter((d) => !same(d));
  return { disabled: cf.change('plugins.disabled', next).config.plugins.disabled, changed: true };
}
