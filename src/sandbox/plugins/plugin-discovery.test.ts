import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../platform/project-root.js';
import { discoverBuiltinPlugins, discoverInstalledPlugins, readPluginPath } from './plugin-discovery.js';

function pkg(dir: string, manifest: unknown, files: Record<string, string> = {}): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), typeof manifest === 'string' ? manifest : JSON.stringify(manifest));
  for (const [f, c] of Object.entries(files)) writeFileSync(join(dir, f), c);
  return dir;
}

describe('plugin discovery', () => {
  const root = mkdtempSync(join(tmpdir(), 'sdesk-plugins-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('reads a manifest; broken ones become candidates with an error, never throws', () => {
    const ok = pkg(join(root, 'a'), { name: 'a', version: '2.0.0', sandboxDesk: { provider: './i.js' } }, { 'i.js': '' });
    expect(readPluginPath(ok, 'cli')).toMatchObject({ name: 'a', version: '2.0.0', entry: join(ok, 'i.js'), error: null });
    expect(readPluginPath(pkg(join(root, 'b'), '{nope'), 'cli').error).toMatch(/not valid JSON/);
    expect(readPluginPath(pkg(join(root, 'c'), { name: 'c' }), 'cli').error).toMatch(/no "sandboxDesk"/);
    expect(readPluginPath(pkg(join(root, 'd'), { name: 'd', sandboxDesk: { provider: '../a/i.js' } }), 'cli').error).toMatch(
      /outside the plugin folder/,
    );
    expect(readPluginPath(pkg(join(root, 'e'), { name: 'e', sandboxDesk: { provider: './dist/index.js' } }), 'cli').error).toMatch(
      /is the plugin built\?/,
    );
    expect(readPluginPath(join(root, 'nothing'), 'cli').error).toMatch(/does not exist/);
  });

  it('finds folders and npm packages (scoped too) under <data dir>/plugins, skipping plain dependencies', () => {
    const dir = join(root, 'data', 'plugins');
    pkg(join(dir, 'local-one'), { name: 'local-one', sandboxDesk: { provider: './i.js' } }, { 'i.js': '' });
    pkg(join(dir, 'node_modules', 'npm-one'), { name: 'npm-one', sandboxDesk: { provider: './i.js' } }, { 'i.js': '' });
    pkg(join(dir, 'node_modules', '@acme', 'box'), { name: '@acme/box', sandboxDesk: { provider: './i.js' } }, { 'i.js': '' });
    pkg(join(dir, 'node_modules', 'left-pad'), { name: 'left-pad' });
    expect(discoverInstalledPlugins(dir).map((c) => [c.name, c.error])).toEqual([
      ['local-one', null],
      ['@acme/box', null],
      ['npm-one', null],
    ]);
  });

  it("the plugins that ship with the app are found in the package's own folder (ssh, podman; not the template)", () => {
    const found = discoverBuiltinPlugins(projectRoot());
    expect(found.map((c) => [c.name, c.source, c.dir])).toEqual([
      ['sandbox-desk-ssh', 'builtin', join(projectRoot(), 'plugins', 'ssh')],
      ['sandbox-desk-podman', 'builtin', join(projectRoot(), 'plugins', 'podman')],
    ]);
    // Elsewhere (a package without them): candidates that say what is missing, never a throw.
    expect(discoverBuiltinPlugins(root).every((c) => /does not exist/.test(c.error ?? ''))).toBe(true);
  });
});
