import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import { SandboxDeskError } from '../shared/errors.js';
import { didYouMean } from '../shared/did-you-mean.js';
import type { AppPaths } from './paths.js';

/*
 * `config.json`: one schema that holds every default. Every object is strict (a misspelt key is an
 * error, not silently ignored) and `prefault({})`s, so a file that sets one key gets every other
 * default; `ConfigSchema.parse({})` is the complete default configuration.
 */

const ms = (what: string, def: number) =>
  z.number().int().positive().describe(`${what}, in milliseconds (a positive integer, e.g. ${def})`).default(def);

const isolation = z
  .preprocess((v) => (v === 'in_process' ? 'in-process' : v), z.enum(['in-process', 'host']))
  .describe('"host" runs each plugin in its own child process; "in-process" runs it inside the app')
  .default('in-process');

const pluginName = z.string().min(1);

/**
 * One warm pool (issue 37): a template — image, limits, desktop on/off — and how many ready sandboxes
 * of it to keep. `memoryMiB` is the sandbox's memory limit; without it the pooled sandbox is capped at
 * the idle size below while it waits and the cap is lifted when it is claimed.
 */
export const PoolTemplateSchema = z.strictObject({
  image: z.string().min(1).optional(),
  cpus: z.number().positive().max(1024).optional(),
  memoryMiB: z.number().int().min(16).optional(),
  desktop: z.boolean().default(false),
  size: z.number().int().min(0).max(32),
});
export type PoolTemplateConfig = z.output<typeof PoolTemplateSchema>;

/** Memory a pooled sandbox is capped at while it waits: its own limit, else 1024 MiB with a desktop, 256 without. */
export function idleMemoryMiB(t: Pick<PoolTemplateConfig, 'memoryMiB' | 'desktop'>): number {
  return t.memoryMiB ?? (t.desktop ? 1024 : 256);
}

/** What the pools hold in memory at most (every pool full, every sandbox at its idle cap), in MiB. */
export function poolsMemoryMiB(templates: readonly PoolTemplateConfig[]): number {
  return templates.reduce((sum, t) => sum + t.size * idleMemoryMiB(t), 0);
}

/** The budget refusal, or null: the one message `pool set` and config load both give. */
export function poolBudgetProblem(templates: readonly PoolTemplateConfig[], budgetMiB: number): string | null {
  const total = poolsMemoryMiB(templates);
  if (total <= budgetMiB) return null;
  return `the pools would hold ${total} MiB (${templates
    .filter((t) => t.size > 0)
    .map((t) => `${t.size} × ${idleMemoryMiB(t)} MiB`)
    .join(' + ')}), more than pools.memoryBudgetMiB ${budgetMiB} MiB: make a pool smaller, or raise the budget`;
}

export const ConfigSchema = z.strictObject({
  shell: z.strictObject({ idleMs: ms('a session shell unused this long is closed', 10 * 60_000) }).prefault({}),
  exec: z
    .strictObject({
      timeoutMs: ms('a command with no --timeout is killed after this long', 10 * 60_000),
      maxOutputBytes: z
        .number()
        .int()
        .positive()
        .describe('output kept per stream, in bytes (a positive integer, e.g. 8388608); the rest is dropped and flagged')
        .default(8 * 1024 * 1024),
    })
    .prefault({}),
  plugins: z
    .strictObject({
      isolation,
      paths: z
        .array(z.string().min(1))
        .describe('extra plugin folders or .js modules, as a JSON array of paths, e.g. ["/opt/my-plugin"]')
        .default([]),
      disabled: z
        .array(pluginName)
        .describe('plugins not to load, by name, as a JSON array, e.g. ["sandbox-desk-podman"] (`plugin disable NAME` adds to it)')
        .default([]),
      builtin: z.boolean().describe('load the plugins that ship with the app (ssh, podman): true or false').default(true),
      timeouts: z
        .strictObject({
          shortMs: ms('time limit of a plugin call (status, exec prefix, load)', 60_000),
          longMs: ms('time limit of a long plugin call (provision, start, stop)', 15 * 60_000),
        })
        .prefault({}),
    })
    .prefault({}),
  serve: z
    .strictObject({
      port: z.number().int().min(0).max(65535).describe('port of `serve` on 127.0.0.1: 0-65535, 0 for a free one').default(0),
    })
    .prefault({}),
  service: z
    .strictObject({
      idleExitSeconds: z
        .number()
        .int()
        .min(1)
        .max(7 * 24 * 3600)
        .describe('the service exits after this many seconds with no running sandbox, no client and no recording (default 600)')
        .default(600),
    })
    .prefault({}),
  desktop: z
    .strictObject({
      geometry: z
        .string()
        .regex(/^\d{3,4}x\d{3,4}$/)
        .describe('the bot desktop\'s screen size, WIDTHxHEIGHT, e.g. "1280x800"')
        .default('1280x800'),
    })
    .prefault({}),
  terminal: z
    .strictObject({
      scrollbackBytes: z
        .number()
        .int()
        .min(4096)
        .max(64 * 1024 * 1024)
        .describe('output each open terminal keeps for a window that reattaches, in bytes (4096-67108864, e.g. 1048576)')
        .default(1024 * 1024),
    })
    .prefault({}),
  log: z
    .strictObject({
      level: z
        .enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'])
        .describe('least severe level written to the log: trace, debug, info, warn, error, fatal or silent')
        .default('info'),
      maxBytes: z
        .number()
        .int()
        .min(4096)
        .describe('the log is rotated past this size, in bytes (an integer >= 4096, e.g. 10485760)')
        .default(10 * 1024 * 1024),
      files: z.number().int().min(1).max(20).describe('rotated log files kept besides the current one (1-20)').default(3),
    })
    .prefault({}),
  clipboard: z
    .strictObject({
      maxBytes: z
        .number()
        .int()
        .min(1024)
        .max(16 * 1024 * 1024)
        .describe('largest clipboard text passed to or from a sandbox desktop, in bytes (1024-16777216, e.g. 1048576)')
        .default(1024 * 1024),
    })
    .prefault({}),
  replay: z
    .strictObject({
      record: z
        .boolean()
        .describe('record each sandbox (screen, terminals, events) for replay; true or false (`--no-record` turns it off for one desktop)')
        .default(true),
      maxBytesPerSandbox: z
        .number()
        .int()
        .min(1024 * 1024)
        .describe('recordings kept per sandbox, in bytes (an integer >= 1048576, e.g. 1073741824); the oldest parts are removed first')
        .default(1024 * 1024 * 1024),
    })
    .prefault({}),
  pools: z
    .strictObject({
      memoryBudgetMiB: z
        .number()
        .int()
        .min(0)
        .describe('memory all warm pools may hold while they wait, in MiB (an integer, e.g. 2048); bigger pools are refused')
        .default(2048),
      templates: z
        .array(PoolTemplateSchema)
        .describe(
          'warm pools, off when empty: a JSON array of {image?, cpus?, memoryMiB?, desktop?, size}, e.g. [{"size":2}] (`sandbox-desk pool set` edits it)',
        )
        .default([]),
    })
    .superRefine((p, ctx) => {
      const problem = poolBudgetProblem(p.templates, p.memoryBudgetMiB);
      if (problem) ctx.addIssue({ code: 'custom', path: ['templates'], message: problem });
    })
    .prefault({}),
  agents: z
    .strictObject({
      allowOtherUsers: z
        .boolean()
        .describe('may agents (MCP) run commands as a user other than the sandbox user, e.g. root; true or false')
        .default(false),
    })
    .prefault({}),
});

export type Config = z.output<typeof ConfigSchema>;
export const DEFAULT_CONFIG: Config = ConfigSchema.parse({});

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Every settable key, dotted (`plugins.timeouts.shortMs`), in schema order. */
export const CONFIG_KEYS: string[] = (function walk(o: Record<string, unknown>, prefix: string): string[] {
  return Object.entries(o).flatMap(([k, v]) => (isObject(v) ? walk(v, `${prefix}${k}.`) : [`${prefix}${k}`]));
})(DEFAULT_CONFIG, '');

/** The schemas one key's value passes through, outermost first: its wrappers (default, prefault, preprocess) and the inner one. */
function leafChain(key: string): z.ZodType[] {
  let s = ConfigSchema as unknown as z.ZodType;
  let chain: z.ZodType[] = [];
  const unwrap = (x: z.ZodType): z.ZodType => {
    chain = [x];
    for (;;) {
      const def = (x as unknown as { _zod: { def: { type: string; innerType?: z.ZodType; out?: z.ZodType } } })._zod.def;
      if ((def.type === 'default' || def.type === 'prefault' || def.type === 'optional') && def.innerType) x = def.innerType;
      else if (def.type === 'pipe' && def.out) x = def.out;
      else return x;
      chain.push(x);
    }
  };
  for (const part of key.split('.')) s = (unwrap(s) as unknown as z.ZodObject).shape[part] as z.ZodType;
  unwrap(s);
  return chain;
}

/** What a valid value of `key` looks like, for errors and `config list`. */
export function describeKey(key: string): string {
  assertKey(key);
  return leafChain(key).find((s) => s.description)?.description ?? '';
}

function assertKey(key: string): void {
  if (CONFIG_KEYS.includes(key)) return;
  // A key whose last part matches (`idleMs` for `shell.idleMs`) is as good a guess as a near spelling.
  const sameLeaf = CONFIG_KEYS.filter((k) => k.split('.').pop() === key.split('.').pop());
  const guess = sameLeaf.length ? `did you mean ${sameLeaf.join(' or ')}?` : didYouMean(key, CONFIG_KEYS);
  throw new SandboxDeskError('invalid_input', `unknown config key ${JSON.stringify(key)}`, {
    hint: guess ? `${guess} (\`sandbox-desk config list\` shows every key)` : `the keys are: ${CONFIG_KEYS.join(', ')}`,
  });
}

function issuesText(err: z.ZodError, where: string): string {
  return err.issues
    .map((i) => {
      const key = i.path.join('.');
      const help =
        i.code === 'unrecognized_keys'
          ? `unknown key${i.keys.length > 1 ? 's' : ''} ${i.keys.map((k) => JSON.stringify(key ? `${key}.${k}` : k)).join(', ')}`
          : `${key}: ${i.message}`;
      const valid = CONFIG_KEYS.includes(key) ? ` — a valid value: ${describeKey(key)}` : '';
      return `${where}${help}${valid}`;
    })
    .join('; ');
}

/** Validates a whole config object; the error names each bad key and what a valid value looks like. */
export function parseConfig(raw: unknown, where = ''): Config {
  const r = ConfigSchema.safeParse(raw);
  if (r.success) return r.data;
  throw new SandboxDeskError('invalid_input', issuesText(r.error, where), {
    hint: 'fix the file, or run `sandbox-desk config set KEY VALUE` / `config unset KEY`',
  });
}

export interface LoadedConfig {
  config: Config;
  /** The keys the file sets (what `config set` edits); {} without a file. */
  raw: JsonObject;
  /** The file read, or null when there is none (all defaults). */
  file: string | null;
  /** True when `file` is the old `<data dir>/config.json`, read because the new one is absent. */
  legacy: boolean;
}

function readJson(file: string): JsonObject {
  let v: unknown;
  try {
    v = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new SandboxDeskError('invalid_input', `${file} is not valid JSON: ${(err as Error).message}`, { hint: 'fix or remove the file' });
  }
  if (!isObject(v))
    throw new SandboxDeskError('invalid_input', `${file} must hold a JSON object, got ${JSON.stringify(v)?.slice(0, 40)}`, {
      hint: 'fix or remove the file',
    });
  return v;
}

const noticed = new Set<string>();

/**
 * Reads the config file (or the old one in the data dir when the new one is absent; `onLegacy` is told
 * once per process and file so the user learns where to move it). A broken file is an error naming it.
 */
export function loadConfig(paths: Pick<AppPaths, 'configFile' | 'legacyConfigFile'>, onLegacy?: (message: string) => void): LoadedConfig {
  let file: string | null = null;
  let legacy = false;
  if (existsSync(paths.configFile)) file = paths.configFile;
  else if (paths.legacyConfigFile && paths.legacyConfigFile !== paths.configFile && existsSync(paths.legacyConfigFile)) {
    file = paths.legacyConfigFile;
    legacy = true;
    if (!noticed.has(file)) {
      noticed.add(file);
      onLegacy?.(
        `reading the old config ${file}; the config now lives in ${paths.configFile} (the next \`sandbox-desk config set\` moves it there, or move it yourself)`,
      );
    }
  }
  const raw = file ? readJson(file) : {};
  return { config: parseConfig(raw, `${file}: `), raw, file, legacy };
}

/** The value of a dotted key in a config (or a raw object: undefined when unset). */
export function getKey(config: Config | JsonObject, key: string): unknown {
  assertKey(key);
  let v: unknown = config;
  for (const part of key.split('.')) v = isObject(v) ? v[part] : undefined;
  return v;
}

/** `config set` input: JSON when it parses (numbers, booleans, arrays), else the text itself. */
export function parseValueText(text: string): Json {
  try {
    return JSON.parse(text) as Json;
  } catch {
    return text;
  }
}

/** A copy of `raw` with `key` set (value given) or removed (undefined), validated as a whole. */
export function withKey(raw: JsonObject, key: string, value: Json | undefined): { raw: JsonObject; config: Config } {
  assertKey(key);
  const next = structuredClone(raw);
  const parts = key.split('.');
  let o: JsonObject = next;
  for (const part of parts.slice(0, -1)) {
    if (!isObject(o[part])) o[part] = {};
    o = o[part];
  }
  const last = parts[parts.length - 1]!;
  if (value === undefined) delete o[last];
  else o[last] = value;
  const r = ConfigSchema.safeParse(next);
  if (!r.success) {
    const bad = r.error.issues.find((i) => i.path.join('.') === key);
    if (bad) {
      throw new SandboxDeskError('invalid_input', `${key}: ${JSON.stringify(value)} is not a valid value (${bad.message})`, {
        hint: `a valid value: ${describeKey(key)}`,
      });
    }
    throw new SandboxDeskError('invalid_input', issuesText(r.error, ''), { hint: 'fix the other keys first (`sandbox-desk config list`)' });
  }
  return { raw: next, config: r.data };
}

/** Writes the file atomically (temp + rename), 0600: it may name private paths. */
export function writeConfigFile(file: string, raw: JsonObject): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(raw, null, 2) + '\n', { mode: 0o600 });
  renameSync(tmp, file);
}
