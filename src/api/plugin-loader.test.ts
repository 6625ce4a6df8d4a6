import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalProvider } from '../sandbox/local/local-provider.js';
import { ProviderRegistry } from '../sandbox/registry.js';
import { PluginLoader } from './plugin-loader.js';

const quiet = { info: () => undefined, warn: () => undefined };
const noConfig = { fromConfig: {}, configError: null, logger: quiet };

describe('PluginLoader', () => {
  let dir: string;
  let registry: ProviderRegistry;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sd-plugin-loader-'));
    registry = new ProviderRegistry();
    registry.registerBuiltin(new LocalProvider());
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('without plugins: built-in backends by name, an unknown one names what exists', async () => {
    const loader = new PluginLoader(registry, dir, false, noConfig);
    expect((await loader.providerOf('local')).name).toBe('local');
    await expect(loader.providerOf('nope')).rejects.toMatchObject({ code: 'unknown_backend', hint: expect.stringContaining('local') });
    expect(await loader.list()).toEqual([]);
    await loader.dispose();
  });

  it('a config that could not be used does not stop loading; the listing says why', async () => {
    const configError = `${join(dir, 'config.json')} is not valid JSON`;
    const loader = new PluginLoader(registry, dir, { scanDataDir: false, builtin: false }, { ...noConfig, configError });
    const list = await loader.list();
    expect(list[0]).toMatchObject({ name: 'config.json', status: 'failed', path: dir });
    expect(list[0]!.error).toMatch(/config\.json/);
    await loader.dispose();
  });

  it('an unknown backend while a plugin failed to load points at that plugin', async () => {
    const broken = join(dir, 'broken-plugin');
    mkdirSync(broken);
    writeFileSync(
      join(broken, 'package.json'),
      JSON.stringify({ name: 'broken-plugin', version: '1.0.0', main: 'index.js', type: 'module' }),
    );
    writeFileSync(join(broken, 'index.js'), 'throw new Error("boom at load");\n');
    const loader = new PluginLoader(registry, dir, { scanDataDir: false, builtin: false, paths: [broken] }, noConfig);
    await loader.ready;
    expect((await loader.list()).find((p) => p.status !== 'loaded')).toBeDefined();
    await expect(loader.providerOf('fromplugin')).rejects.toMatchObject({
      code: 'unknown_backend',
      message: expect.stringMatching(/did not load/),
      hint: expect.stringContaining('plugin list'),
    });
    await loader.dispose();
  });

  it('"plugin … loaded" is logged at debug, not info: every CLI call loads the plugins', async () => {
    const good = join(dir, 'good-plugin');
    mkdirSync(good);
    writeFileSync(
      join(good, 'package.json'),
      JSON.stringify({ name: 'good-plugin', version: '1.0.0', type: 'module', sandboxDesk: { provider: './index.js' } }),
    );
    writeFileSync(
      join(good, 'index.js'),
      `export const apiVersion = 1;
export function register(ctx) {
  ctx.registerProvider({ name: 'goodbox', isContainer: true, defaultCwd: '~', supportsStreams: false, description: 'd',
    provision: async (s) => ({ backendRef: s.resourceName, user: null, image: null }), start: async () => {}, stop: async () => {},
    remove: async () => {}, status: async () => ({ state: 'missing', incarnation: null }), createEnvironment: async () => { throw new Error('x'); } });
}
`,
    );
    const lines: Array<[string, string]> = [];
    const logger = {
      info: (m: string) => lines.push(['info', m]),
      warn: (m: string) => lines.push(['warn', m]),
      debug: (m: string) => lines.push(['debug', m]),
    };
    const loader = new PluginLoader(registry, dir, { scanDataDir: false, builtin: false, paths: [good] }, { ...noConfig, logger });
    await loader.ready;
    expect((await loader.list()).find((p) => p.name === 'good-plugin')).toMatchObject({ error: null, status: 'loaded' });
    expect(lines.filter(([level, m]) => level !== 'debug' && /loaded/.test(m))).toEqual([]);
    expect(lines).toContainEqual(['debug', expect.stringMatching(/plugin good-plugin: loaded/)]);
    await loader.dispose();
  });
});
