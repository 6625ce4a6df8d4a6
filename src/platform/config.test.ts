import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  CONFIG_KEYS,
  DEFAULT_CONFIG,
  describeKey,
  getKey,
  loadConfig,
  parseConfig,
  parseValueText,
  withKey,
  writeConfigFile,
} from './config.js';

const made: string[] = [];
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'sdesk-config-'));
  made.push(d);
  return d;
};
afterAll(() => made.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('config schema', () => {
  it('holds every default', () => {
    expect(DEFAULT_CONFIG).toEqual({
      shell: { idleMs: 600_000 },
      exec: { timeoutMs: 600_000, maxOutputBytes: 8 * 1024 * 1024 },
      plugins: { isolation: 'in-process', paths: [], disabled: [], builtin: true, timeouts: { shortMs: 60_000, longMs: 900_000 } },
      serve: { port: 0 },
      service: { idleExitSeconds: 600 },
      desktop: { geometry: '1280x800' },
      terminal: { scrollbackBytes: 1024 * 1024 },
      log: { level: 'info', maxBytes: 10 * 1024 * 1024, files: 3 },
      clipboard: { maxBytes: 1024 * 1024 },
      replay: { record: true, maxBytesPerSandbox: 1024 * 1024 * 1024 },
      pools: { memoryBudgetMiB: 2048, templates: [] },
      agents: { allowOtherUsers: false },
    });
    expect(CONFIG_KEYS).toContain('agents.allowOtherUsers');
    expect(CONFIG_KEYS).toContain('plugins.timeouts.shortMs');
    // Every key says what a valid value looks like.
    for (const k of CONFIG_KEYS) expect(describeKey(k), k).not.toBe('');
  });

  it("one key set keeps every other default; Hermes' in_process spelling is accepted", () => {
    const c = parseConfig({ plugins: { isolation: 'in_process', timeouts: { shortMs: 5 } } });
    expect(c.plugins).toMatchObject({ isolation: 'in-process', timeouts: { shortMs: 5, longMs: 900_000 }, disabled: [] });
    expect(c.shell.idleMs).toBe(600_000);
  });

  it('unknown keys and bad values are refused, naming the key and a valid value', () => {
    expect(() => parseConfig({ plugins: { isolaton: 'host' } }, 'f: ')).toThrow(/f: unknown key "plugins.isolaton"/);
    expect(() => parseConfig({ sheel: {} })).toThrow(/unknown key "sheel"/);
    expect(() => parseConfig({ shell: { idleMs: -1 } })).toThrow(/shell\.idleMs: .* a valid value: .*positive integer, e\.g\. 600000/);
  });

  it('withKey: set, unset, refusals with what a valid value looks like', () => {
    const a = withKey({}, 'plugins.isolation', 'host');
    expect(a.raw).toEqual({ plugins: { isolation: 'host' } });
    expect(a.config.plugins.isolation).toBe('host');
    expect(withKey(a.raw, 'plugins.isolation', undefined).config.plugins.isolation).toBe('in-process');
    let err: { message: string; hint?: string } | null = null;
    try {
      withKey({}, 'plugins.isolation', 'sideways');
    } catch (e) {
      err = e as { message: string; hint?: string };
    }
    expect(err!.message).toMatch(/plugins\.isolation: "sideways" is not a valid value/);
    expect(err!.hint).toMatch(/"host" runs each plugin in its own child process; "in-process"/);
    expect(() => withKey({}, 'serve.port', 70000)).toThrow(/serve\.port: 70000 is not a valid value/);
    expect(() => withKey({}, 'nope.key', 1)).toThrow(/unknown config key "nope\.key"/);
    expect(() => getKey(DEFAULT_CONFIG, 'plugins')).toThrow(/unknown config key "plugins"/);
    expect(getKey(DEFAULT_CONFIG, 'desktop.geometry')).toBe('1280x800');
  });

  it('values on the command line: JSON when it parses, else text', () => {
    expect(parseValueText('5000')).toBe(5000);
    expect(parseValueText('true')).toBe(true);
    expect(parseValueText('["a"]')).toEqual(['a']);
    expect(parseValueText('host')).toBe('host');
  });
});

describe('loading the file', () => {
  it('absent: defaults; present: read and validated; the old data-dir file is read when the new one is absent, and said once', () => {
    const d = tempDir();
    const paths = { configFile: join(d, 'config', 'config.json'), legacyConfigFile: join(d, 'data', 'config.json') };
    expect(loadConfig(paths)).toEqual({ config: DEFAULT_CONFIG, raw: {}, file: null, legacy: false });
    writeConfigFile(paths.legacyConfigFile, { plugins: { isolation: 'host' } });
    const said: string[] = [];
    const old = loadConfig(paths, (m) => said.push(m));
    expect(old).toMatchObject({ file: paths.legacyConfigFile, legacy: true, config: { plugins: { isolation: 'host' } } });
    loadConfig(paths, (m) => said.push(m));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/reading the old config .*data\/config\.json; the config now lives in .*config\/config\.json/);
    writeConfigFile(paths.configFile, { serve: { port: 8123 } });
    expect(loadConfig(paths)).toMatchObject({
      file: paths.configFile,
      legacy: false,
      config: { serve: { port: 8123 }, plugins: { isolation: 'in-process' } },
    });
    expect(statSync(paths.configFile).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(paths.configFile, 'utf8'))).toEqual({ serve: { port: 8123 } });
  });

  it('a broken file is an error that names it', () => {
    const d = tempDir();
    const paths = { configFile: join(d, 'config.json'), legacyConfigFile: null };
    writeFileSync(paths.configFile, '{nope');
    expect(() => loadConfig(paths)).toThrow(/config\.json is not valid JSON/);
    writeFileSync(paths.configFile, JSON.stringify({ exec: { timeoutMs: 'soon' } }));
    expect(() => loadConfig(paths)).toThrow(/config\.json: exec\.timeoutMs: .*a valid value/);
  });
});
