import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
      execFile(process.execPath, ['--import', join(home, 'register.mjs'), bin, ...args], { env, timeout: 20_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
      );
    });

  it('sends one request — the exec, tagged with the version it expects — from one bundled file, without node:http, commander, zod, pino or core', async () => {
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

    const loaded = readFileSync(env.MODLOG!, 'utf8').trim().split('\n');
    // Two files of the project — the launcher and the fast path bundled into one (scripts/bundle-cli.mjs) —
    // instead of the 14 small modules tsc makes of it.
    expect(loaded.filter((u) => u.startsWith('file:'))).toEqual([
      new URL(`file://${bin}`).href,
      new URL(`file://${join(projectRoot(), 'dist', 'src', 'cli', 'fast-exec.bundle.js')}`).href,
    ]);
    // Node's HTTP client costs a cold process more than the request (socket-request.ts); starting a
    // service is not this path's business unless none runs.
    expect(loaded.filter((u) => /^node:(http|https|child_process)$/.test(u))).toEqual([]);
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
});
