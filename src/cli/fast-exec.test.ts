import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientServicePaths } from '../client/connect.js';
import { homePaths } from '../platform/paths.js';
import { projectRoot } from '../platform/project-root.js';
import { clientVersionTag, ownVersion, SERVICE_PROTOCOL, type ServiceInfo } from '../shared/service-info.js';
import { logQuietFor, plainExec } from './fast-exec.js';

describe('plainExec: only the exact plain shape takes the fast path', () => {
  it('recognises exec NAME [--session S] [--workdir D] [--timeout N] [--json] -- WORD…', () => {
    expect(plainExec(['exec', 'box', '--', 'true'])).toEqual({ name: 'box', words: ['true'], flags: { shell: true } });
    expect(
      plainExec(['exec', 'box', '--json', '--session', 'a', '--workdir', 'sub', '--timeout', '5', '--', 'echo', '--json', '-x']),
    ).toEqual({
      name: 'box',
      words: ['echo', '--json', '-x'],
      flags: { shell: true, json: true, session: 'a', workdir: 'sub', timeout: '5' },
    });
  });

  it('hands anything else to the full parser (null)', () => {
    for (const argv of [
      ['exec', 'box', 'true'], // no --
      ['exec', 'box', '--'], // no command: commander's error
      ['exec', '--session', 'a', 'box', '--', 'true'], // an option before the name
      ['exec', 'box', '--session=a', '--', 'true'],
      ['exec', 'box', '--session', 'a', '--session', 'b', '--', 'true'], // repeated
      ['exec', 'box', '--session', '--json', '--', 'true'], // a value that looks like a flag
      ['exec', 'box', '--no-shell', '--', 'true'],
      ['exec', 'box', '--help', '--', 'true'],
      ['exec', 'box', '--timeout', '-1', '--', 'true'],
      ['exec', '', '--', 'true'],
      ['--debug', 'exec', 'box', '--', 'true'],
      ['x', 'box', '--', 'true'],
      ['exec', 'box', '--constructor', '--', 'true'],
    ])
      expect(plainExec(argv), argv.join(' ')).toBeNull();
  });
});

describe('logQuietFor: the fast path skips the log only when it would write nothing', () => {
  let home: string;
  beforeAll(() => void (home = mkdtempSync(join(tmpdir(), 'sdesk-fastlog-'))));
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('no config, or a level at info and above: quiet; debug, trace or a broken file: the full path', () => {
    const paths = homePaths(home);
    expect(logQuietFor(paths)).toBe(true);
    const cases: [string, boolean][] = [
      ['{"log":{"level":"warn"}}', true],
      ['{"docker":{}}', true],
      ['{"log":{"level":"debug"}}', false],
      ['{"log":{"level":"trace"}}', false],
      ['{"log":{"level":7}}', false],
      ['{not json', false],
    ];
    for (const [text, quiet] of cases) {
      writeFileSync(paths.configFile, text);
      expect(logQuietFor(paths), text).toBe(quiet);
    }
  });
});

/**
 * The built CLI (bin/sandbox-desk.js → dist/, built by `npm run build`) as a user runs it, against a
 * stand-in service on the real socket path of its own temp data dir: what the fast path loads, and
 * what it sends.
 */
describe('sandbox-desk exec NAME -- … (the built CLI, a stand-in service)', () => {
  let home: string;
  let server: Server;
  let env: NodeJS.ProcessEnv;
  const seen: { method?: string; url?: string; headers: IncomingMessage['headers']; body: string }[] = [];
  let answer: (url: string) => { status: number; body: unknown } = () => ({ status: 500, body: {} });
  const bin = join(projectRoot(), 'bin', 'sandbox-desk.js');

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'sdesk-fastexec-'));
    env = { ...process.env, SANDBOX_DESK_HOME: home, XDG_RUNTIME_DIR: home, MODLOG: join(home, 'modules.log') };
    // A module-load hook in the child: every module the CLI loads, by URL, into MODLOG.
    writeFileSync(
      join(home, 'hooks.mjs'),
      `import { appendFileSync } from 'node:fs';\nexport async function load(url, context, next) { appendFileSync(process.env.MODLOG, url + '\\n'); return next(url, context); }\n`,
    );
    writeFileSync(join(home, 'register.mjs'), `import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n`);
    // The bin and its bundle are CommonJS, which Node 20's loader hooks do not see once past the entry:
    // at exit, every file in require's cache and every built-in module this thread loaded, as URLs.
    writeFileSync(
      join(home, 'modlog.cjs'),
      `process.on('exit', () => {
  const files = Object.keys(require.cache).map((f) => require('node:url').pathToFileURL(f).href);
  const builtins = process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => 'node:' + m.slice(13));
  require('node:fs').appendFileSync(process.env.MODLOG, [...files, ...builtins].join('\\n') + '\\n');
});\n`,
    );
    const paths = clientServicePaths({ env });
    mkdirSync(paths.runtimeDir, { recursive: true, mode: 0o700 });
    server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8').on('data', (d: string) => (body += d));
      req.on('end', () => {
        seen.push({ method: req.method, url: req.url, headers: req.headers, body });
        const a = answer(req.url ?? '');
        res.writeHead(a.status, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(a.body));
      });
    });
    await new Promise<void>((resolve) => server.listen(paths.socketPath, resolve));
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    rmSync(home, { recursive: true, force: true });
  });

  const run = (args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      rmSync(env.MODLOG!, { force: true });
      seen.length = 0;
      const hooks = ['--import', join(home, 'register.mjs'), '--require', join(home, 'modlog.cjs')];
      execFile(process.execPath, [...hooks, bin, ...args], { env, timeout: 20_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
      );
    });

  it('sends one request — the exec, tagged with the version it expects — from one bundled CommonJS file, without node:http, node:crypto, commander, zod, pino or core', async () => {
    answer = () => ({
      status: 200,
      body: {
        ok: {
          stdout: 'hi\n',
          stderr: '',
          encoding: { stdout: 'utf8', stderr: 'utf8' },
          exitCode: 3,
          cwd: '/tmp',
          warnings: [],
        },
      },
    });
    const r = await run(['exec', 'box', '--session', 's1', '--', 'echo', 'hi']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('hi\n');
    expect(r.code).toBe(3);
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(['POST /api/call/exec']);
    expect(seen[0]!.headers['x-sandbox-desk-client']).toBe(clientVersionTag(ownVersion(env)));
    expect(JSON.parse(seen[0]!.body)).toEqual({ sandbox: 'box', command: 'echo hi', session: 's1', mode: 'shell' });

    const loaded = [...new Set(readFileSync(env.MODLOG!, 'utf8').trim().split('\n'))];
    // Two files of the project — the launcher and the fast path bundled into one CommonJS file
    // (scripts/bundle-cli.mjs) — instead of the 14 small ES modules tsc makes of it.
    const ours = pathToFileURL(home).href;
    expect(loaded.filter((u) => u.startsWith('file:') && !u.startsWith(ours))).toEqual([
      pathToFileURL(bin).href,
      pathToFileURL(join(projectRoot(), 'dist', 'src', 'cli', 'fast-exec.bundle.cjs')).href,
    ]);
    // Node's HTTP client costs a cold process more than the request (socket-request.ts), node:crypto
    // ~6 ms for one hash of the data dir (sha256-hex.ts uses @noble/hashes instead); starting a service is not this path's
    // business unless none runs.
    expect(loaded.filter((u) => /^node:(http|https|crypto|child_process)$/.test(u))).toEqual([]);
    // Nothing from node_modules at all (commander, zod, pino, ws…), not the full CLI, not the contract's
    // schemas, not the config schema, not the core.
    const heavy = loaded.filter((u) =>
      /\/node_modules\/|\/dist\/src\/(api|platform\/config|platform\/log|sandbox)\/|\/cli\/main\.js$/.test(u),
    );
    expect(heavy).toEqual([]);
  });

  it('a service of another version refuses the tagged call; the client then handshakes and says what to do', async () => {
    const info: ServiceInfo = {
      version: '0.0.0-other',
      pid: process.pid,
      protocol: SERVICE_PROTOCOL,
      dataDir: home,
      startedAt: new Date().toISOString(),
      busy: { runningSandboxes: 1, clients: 1, recordings: 0 },
    };
    answer = (url) =>
      url === '/service/info'
        ? { status: 200, body: info }
        : { status: 409, body: { error: { code: 'version_mismatch', message: 'another version', details: { service: info } } } };
    const r = await run(['exec', 'box', '--', 'true']);
    expect(r.code).toBe(125);
    expect(r.stderr).toMatch(
      /runs version 0\.0\.0-other .*1 running sandbox\(es\).*stop your sandboxes or run `sandbox-desk service stop --force`/,
    );
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(['POST /api/call/exec', 'GET /service/info']);
  });

  it('any other shape goes through the full CLI (commander), through the same one-request client', async () => {
    answer = () => ({
      status: 200,
      body: { ok: { stdout: '', stderr: 'e\n', encoding: { stdout: 'utf8', stderr: 'utf8' }, exitCode: 0, cwd: '/', warnings: [] } },
    });
    const r = await run(['exec', 'box', '--no-shell', '--', 'true']);
    expect(r).toEqual({ code: 0, stdout: '', stderr: 'e\n' });
    expect(readFileSync(env.MODLOG!, 'utf8')).toMatch(/\/node_modules\/commander\//);
    expect(seen.map((s) => `${s.method} ${s.url} ${s.body}`)).toEqual([
      'POST /api/call/exec {"sandbox":"box","command":"true","mode":"oneshot"}',
    ]);
  });

  /** Node with `args` in the test's environment (plus `extra`), against the same stand-in service. */
  const node = (args: string[], extra: NodeJS.ProcessEnv = {}) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      seen.length = 0;
      execFile(process.execPath, args, { env: { ...env, ...extra }, timeout: 20_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
      );
    });
  const bundle = join(projectRoot(), 'dist', 'src', 'cli', 'fast-exec.bundle.cjs');

  it("carries package.json's version inlined: the bundle runs from a folder with no package.json above it", async () => {
    answer = () => ({
      status: 200,
      body: { ok: { stdout: '', stderr: '', encoding: { stdout: 'utf8', stderr: 'utf8' }, exitCode: 0, cwd: '/', warnings: [] } },
    });
    // A copy under the temp dir: were the version read at run time, its search for package.json would fail.
    const copy = join(home, 'no-package', 'fast-exec.bundle.cjs');
    mkdirSync(join(home, 'no-package'));
    copyFileSync(bundle, copy);
    const r = await node([
      '-e',
      `require(${JSON.stringify(copy)}).fastExec(['exec', 'box', '--', 'true']).then((c) => (process.exitCode = c))`,
    ]);
    expect(r).toEqual({ code: 0, stdout: '', stderr: '' });
    const { version } = JSON.parse(readFileSync(join(projectRoot(), 'package.json'), 'utf8')) as { version: string };
    expect(seen.map((s) => s.headers['x-sandbox-desk-client'])).toEqual([clientVersionTag(version)]);
  });

  it("with no service running, starts one with its own checkout's bin (the package root from the CommonJS bundle's path)", async () => {
    // A data dir with no socket; spawn is replaced (before the CLI loads) by one that records what it was
    // asked to run and exits: the service itself is not this test's business.
    const empty = join(home, 'no-service');
    mkdirSync(empty);
    writeFileSync(
      join(home, 'spawn-recorder.cjs'),
      `require('node:child_process').spawn = (file, args) => {
  require('node:fs').writeFileSync(process.env.SPAWNLOG, JSON.stringify([file, ...args]));
  process.exit(0);
};
require('node:module').syncBuiltinESMExports();\n`,
    );
    const spawnLog = join(home, 'spawn.json');
    const r = await node(['--require', join(home, 'spawn-recorder.cjs'), bin, 'exec', 'box', '--', 'true'], {
      SANDBOX_DESK_HOME: empty,
      XDG_RUNTIME_DIR: empty,
      SPAWNLOG: spawnLog,
    });
    expect(r).toEqual({ code: 0, stdout: '', stderr: '' });
    expect(JSON.parse(readFileSync(spawnLog, 'utf8'))).toEqual([process.execPath, bin, 'service', 'run']);
  });
});
