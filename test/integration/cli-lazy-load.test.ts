/**
 * `__complete` (a Tab press), `--version` and `--help` build the command tree and stop: they must not load
 * the core (the facade pulls in the Docker client, node-pty, the MCP SDK…). A loader hook records which
 * modules each run loaded; a command that does need the core still loads it on first use.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const home = mkdtempSync(join(tmpdir(), 'sdesk-lazy-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));

function loaded(...args: string[]): { status: number | null; modules: string[]; stdout: string } {
  const r = spawnSync(
    process.execPath,
    ['--no-warnings', '--experimental-loader', join(ROOT, 'test/fixtures/load-recorder.mjs'), join(ROOT, 'bin/sandbox-desk.js'), ...args],
    { env: { ...process.env, SANDBOX_DESK_HOME: home }, encoding: 'utf8', timeout: 60_000 },
  );
  const modules = r.stderr
    .split('\n')
    .filter((l) => l.startsWith('LOAD '))
    .map((l) => l.slice(5));
  return { status: r.status, modules, stdout: r.stdout };
}

const HEAVY = [/\/api\/sandbox-desk\.js$/, /\/api\/local-server\.js$/, /\/mcp\//, /@modelcontextprotocol/, /dockerode/, /node-pty/];

describe('the CLI loads the core lazily', () => {
  for (const args of [['__complete', '--', 'sandbox', ''], ['--version'], ['--help']]) {
    it(`${args.join(' ')} does not load the core`, () => {
      const r = loaded(...args);
      expect(r.status).toBe(0);
      expect(r.stdout.length).toBeGreaterThan(0);
      expect(r.modules.some((m) => m.endsWith('/cli/main.js'))).toBe(true);
      expect(r.modules.filter((m) => HEAVY.some((h) => h.test(m)))).toEqual([]);
    });
  }

  it('exec through the client loads no part of the core: no store, engine, shells, desktop or server', () => {
    // The CLI's real main with its client pointed at a stand-in service (test/fixtures/exec-fake-service.mjs):
    // what `exec` itself loads, apart from today's interim in-process core (cli-client.ts), which the
    // per-user service replaces.
    const r = spawnSync(
      process.execPath,
      [
        '--no-warnings',
        '--experimental-loader',
        join(ROOT, 'test/fixtures/load-recorder.mjs'),
        join(ROOT, 'test/fixtures/exec-fake-service.mjs'),
        pathToFileURL(join(ROOT, 'dist/src/cli/main.js')).href,
        pathToFileURL(join(ROOT, 'dist/src/client/http-client.js')).href,
      ],
      { env: { ...process.env, SANDBOX_DESK_HOME: home }, encoding: 'utf8', timeout: 60_000 },
    );
    const modules = r.stderr
      .split('\n')
      .filter((l) => l.startsWith('LOAD '))
      .map((l) => l.slice(5));
    expect(r.stdout).toBe('fake-service-ok\n');
    expect(r.status).toBe(0);
    expect(modules.some((m) => m.endsWith('/client/http-client.js'))).toBe(true);
    const core = [...HEAVY, /better-sqlite3/, /\/dist\/src\/(store|exec|session|desktop|cwd)\//, /\/node_modules\/ws\//];
    expect(modules.filter((m) => core.some((h) => h.test(m)))).toEqual([]);
  });

  it('a command that needs the core still gets it', () => {
    const r = loaded('sandbox', 'list', '--json');
    expect(r.status).toBe(0);
    // (The core comes in through `require` of its ES module, which the loader hook does not see: the
    // answer — read from the core's store — is the proof it loaded.)
    expect(JSON.parse(r.stdout)).toEqual([]);
  });
});
