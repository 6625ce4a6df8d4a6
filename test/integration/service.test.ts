/**
 * The per-user service (issue 34, items 1 and 5): started on demand by a client, one per data dir,
 * peer uid checked, versions handshaken, idle exit, the data dir removed, `kill -9` and re-adoption.
 * Real parts: the built bin (`npm run build`), a real Docker sandbox, real Unix sockets. Every service a
 * test starts is ended by the test (afterAll kills whatever pid it saw).
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientServicePaths, connect, probeService, type ServiceClient } from '../../src/client/connect.js';
import { createHttpClient } from '../../src/client/http-client.js';
import { clientVersionTag, ownVersion, type ServiceInfo } from '../../src/shared/service-info.js';
import { rejectsWith } from '../expect-error.js';
import { uniqueName } from './helpers.js';

const BIN = resolve(import.meta.dirname, '../../bin/sandbox-desk.js');
const started = new Set<number>();
const homes: string[] = [];

function newHome(tag: string): { home: string; env: NodeJS.ProcessEnv } {
  const home = mkdtempSync(join(tmpdir(), `sdesk-svc-${tag}-`));
  homes.push(home);
  // No XDG_RUNTIME_DIR: the socket is in <home>/run/, private to this test.
  const env: NodeJS.ProcessEnv = { ...process.env, SANDBOX_DESK_HOME: home, XDG_RUNTIME_DIR: '' };
  delete env.SANDBOX_DESK_TEST_VERSION;
  delete env.SANDBOX_DESK_SERVICE_IDLE_SECONDS;
  return { home, env };
}

async function info(env: NodeJS.ProcessEnv): Promise<ServiceInfo> {
  const i = await probeService(clientServicePaths({ env }).socketPath);
  if (!i) throw new Error('no service answers');
  started.add(i.pid);
  return i;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(what: string, ok: () => boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

afterAll(async () => {
  for (const pid of started) if (alive(pid)) process.kill(pid, 'SIGTERM');
  for (const pid of started) await until(`service ${pid} to end`, () => !alive(pid), 20_000).catch(() => process.kill(pid, 'SIGKILL'));
  for (const h of homes) rmSync(h, { recursive: true, force: true });
});

describe('the service with a docker sandbox (one data dir for the file)', () => {
  const { home, env } = newHome('main');
  const sandbox = uniqueName('svc');
  let client: ServiceClient;

  beforeAll(async () => {
    // The socket is missing: the client starts the service.
    expect(existsSync(clientServicePaths({ env }).socketPath)).toBe(false);
    client = await connect({ env });
    await info(env);
    await client.call('createSandbox', { name: sandbox, backend: 'docker' });
  });
  afterAll(async () => {
    const c = await connect({ env }).catch(() => null);
    await c?.call('removeSandbox', { name: sandbox, force: true }).catch(() => undefined);
    await c?.close();
  });

  it('a missing socket: the client started it; socket 0600 in a 0700 dir, info says who and what is busy', async () => {
    const paths = clientServicePaths({ env });
    expect(statSync(paths.socketPath).mode & 0o777).toBe(0o600);
    expect(statSync(paths.runtimeDir).mode & 0o777).toBe(0o700);
    const i = await info(env);
    expect(i).toMatchObject({ protocol: 1, dataDir: home, busy: { runningSandboxes: 1 } });
    expect(JSON.parse(readFileSync(join(home, 'service.lock'), 'utf8')).pid).toBe(i.pid);
    const r = await client.call('exec', { sandbox, command: 'echo hi' });
    expect(r.stdout).toBe('hi\n');
  });

  it('a second service on the same data dir exits at once and says which one serves it', async () => {
    const first = await info(env);
    const t0 = Date.now();
    const r = spawnSync(process.execPath, [BIN, 'service', 'run'], { env, encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(125);
    expect(r.stderr).toContain(`a Sandbox Desk service (pid ${first.pid}) already serves ${home}`);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect((await info(env)).pid).toBe(first.pid);
  });

  it('a client of another uid is refused by the peer check, not by the file mode', async () => {
    const paths = clientServicePaths({ env });
    // Reachable for this test only: the modes would refuse uid 65534 before the service could.
    chmodSync(home, 0o755);
    chmodSync(paths.runtimeDir, 0o755);
    chmodSync(paths.socketPath, 0o666);
    try {
      const script = `const c=require('net').connect(${JSON.stringify(paths.socketPath)},()=>c.write('GET /service/info HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'));let o='';c.on('data',d=>o+=d);c.on('close',()=>{process.stdout.write(o)});c.on('error',e=>{process.stdout.write('error '+e.code)})`;
      const r = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '-e', script], {
        encoding: 'utf8',
        timeout: 15_000,
      });
      expect(r.stderr).toBe('');
      expect(r.stdout).toMatch(
        /^sandbox-desk: refused: the connecting process \(pid \d+\) runs as uid 65534; this service serves only uid 0\n$/,
      );
    } finally {
      chmodSync(paths.socketPath, 0o600);
      chmodSync(paths.runtimeDir, 0o700);
      chmodSync(home, 0o700);
    }
  });

  it('another version while a sandbox runs: refused with version_mismatch and what to do', async () => {
    const e = await rejectsWith(connect({ env: { ...env, SANDBOX_DESK_TEST_VERSION: '0.0.0-other' } }), 'version_mismatch');
    expect(e.hint).toBe('stop your sandboxes or run `sandbox-desk service stop --force`');
  });

  it('a call tagged with another version is refused before it runs (no /service/info round-trip needed)', async () => {
    const marker = `/tmp/sdesk-tagged-${process.pid}`;
    const tagged = createHttpClient({ socketPath: clientServicePaths({ env }).socketPath, expects: '0.0.0-other/1' });
    try {
      const e = await rejectsWith(tagged.call('exec', { sandbox, command: `touch ${marker}` }), 'version_mismatch');
      expect(e.message).toMatch(/^this service runs \S+\/1; the client expects 0\.0\.0-other\/1$/);
      expect((e.details?.service as ServiceInfo).pid).toBe((await info(env)).pid);
    } finally {
      await tagged.close();
    }
    expect((await client.call('exec', { sandbox, command: `test -e ${marker}; echo $?` })).stdout).toBe('1\n');
    // Its own version tag passes: what every CLI call sends.
    const own = createHttpClient({ socketPath: clientServicePaths({ env }).socketPath, expects: clientVersionTag(ownVersion(env)) });
    expect((await own.call('exec', { sandbox, command: 'echo ok' }).finally(() => own.close())).stdout).toBe('ok\n');
  });

  it('kill -9 of the service: the next client starts a new one that re-adopts the running sandbox', async () => {
    const before = await info(env);
    await client.call('exec', { sandbox, command: 'cd /tmp', session: 'k9' });
    process.kill(before.pid, 'SIGKILL');
    await until('the killed service to be gone', () => !alive(before.pid));
    // What it left: a stale socket and a lock naming a dead pid.
    const paths = clientServicePaths({ env });
    expect(lstatSync(paths.socketPath).isSocket()).toBe(true);
    expect(JSON.parse(readFileSync(paths.lockFile, 'utf8')).pid).toBe(before.pid);
    await client.close();
    client = await connect({ env });
    const after = await info(env);
    expect(after.pid).not.toBe(before.pid);
    const r = await client.call('exec', { sandbox, command: 'pwd', session: 'k9' });
    expect(r).toMatchObject({ exitCode: 0, stdout: '/tmp\n' });
    expect(after.busy.runningSandboxes).toBe(1);
  });

  it('a client killed mid-stream (a terminal): the service frees its viewer and its connection', async () => {
    // A terminal outlives its viewers by design (stream-server.ts: a viewer going only detaches it, the
    // shell runs on until terminalClose); what a dead client held is its attachment and its connection.
    const paths = clientServicePaths({ env });
    const holder = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { createHttpClient } from ${JSON.stringify(resolve(import.meta.dirname, '../../dist/src/client/http-client.js'))};
         const c = createHttpClient({ socketPath: ${JSON.stringify(paths.socketPath)} });
         const g = await c.call('terminalOpen', { sandbox: ${JSON.stringify(sandbox)}, cols: 80, rows: 24 });
         const ws = c.openStream(g);
         ws.on('open', () => process.stdout.write('open ' + g.terminalId + '\\n'));
         ws.on('error', (e) => process.stdout.write('error ' + e.message + '\\n'));`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let line = '';
    holder.stdout.setEncoding('utf8').on('data', (d: string) => (line += d));
    await until('the terminal stream to open', () => line.includes('\n'));
    const terminalId = /^open (\S+)\n$/.exec(line)?.[1] ?? '';
    expect(terminalId, line).not.toBe('');
    const viewers = async () => (await client.call('listTerminals', { sandbox })).find((t) => t.terminalId === terminalId)?.viewers;
    expect(await viewers()).toBe(1);
    const clientsWithHolder = (await info(env)).busy.clients;
    holder.kill('SIGKILL');
    const end = Date.now() + 10_000;
    while ((await viewers()) !== 0 || (await info(env)).busy.clients >= clientsWithHolder) {
      if (Date.now() > end) throw new Error(`the dead client's viewer or connection was not freed`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await client.call('terminalClose', { terminalId });
  });

  it('serve is a client: the service listens on loopback for as long as the serve process lives', async () => {
    const serve = spawn(process.execPath, [BIN, 'serve', '--json', '--port', '0'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    serve.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    await until('serve to print its URL', () => out.includes('\n'));
    const url = new URL((JSON.parse(out) as { url: string }).url);
    const list = () =>
      fetch(`${url.origin}/api/call/listSandboxes`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${url.searchParams.get('token')}`, 'Content-Type': 'application/json' },
        body: '{}',
      });
    expect(((await (await list()).json()) as { ok: { name: string }[] }).ok.map((s) => s.name)).toContain(sandbox);
    const servicePid = (await info(env)).pid;
    serve.kill('SIGKILL');
    const end = Date.now() + 10_000;
    for (;;) {
      const refused = await list().then(
        () => false,
        () => true,
      );
      if (refused) break;
      if (Date.now() > end) throw new Error('the listener outlived its serve client');
      await new Promise((r) => setTimeout(r, 50));
    }
    // The service itself runs on.
    expect((await info(env)).pid).toBe(servicePid);
  });

  it('another version when nothing runs: the service is restarted as this version', async () => {
    await client.call('removeSandbox', { name: sandbox, force: true });
    const old = await info(env);
    await client.close();
    const other = { ...env, SANDBOX_DESK_TEST_VERSION: '0.0.0-other' };
    client = await connect({ env: other });
    const now = await info(other);
    expect(now.pid).not.toBe(old.pid);
    expect(now.version).toBe('0.0.0-other');
    await until('the old service to exit', () => !alive(old.pid));
  });
});

describe('lifecycle of an idle service', () => {
  it('idle exit after the configured delay, the lock and socket removed', async () => {
    const { home, env } = newHome('idle');
    const c = await connect({ env: { ...env, SANDBOX_DESK_SERVICE_IDLE_SECONDS: '1' } });
    const i = await info(env);
    await c.close();
    await until('the idle service to exit', () => !alive(i.pid), 10_000);
    expect(existsSync(join(home, 'service.lock'))).toBe(false);
    expect(existsSync(clientServicePaths({ env }).socketPath)).toBe(false);
    expect(readFileSync(join(home, 'logs', 'service.log'), 'utf8')).toContain('stopping: idle for 1 s');
  });

  it('the data dir removed under a running service: it exits cleanly and says why', async () => {
    const { home, env } = newHome('rm');
    const child = spawn(process.execPath, [BIN, 'service', 'run'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    started.add(child.pid ?? 0);
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    await until('the service to listen', () => err.includes('serving'));
    rmSync(home, { recursive: true, force: true });
    const code = await new Promise<number | null>((r, reject) => {
      child.once('exit', r);
      setTimeout(() => reject(new Error(`the service did not exit after its data dir was removed: ${err}`)), 20_000).unref();
    });
    expect(code).toBe(0);
    expect(err).toContain(`stopping: the data directory ${home} was removed`);
  });
});

describe("the service's shells", () => {
  it("started from no shell at all (no SHLVL, as from a desktop launcher): a local sandbox's commands read no ~/.bashrc", async () => {
    const { home, env } = newHome('rc');
    // The person's home, with a ~/.bashrc that leaves a mark; bash's rshd guess would read it (shell-level.ts).
    const personal = join(home, 'person');
    mkdirSync(personal);
    writeFileSync(join(personal, '.bashrc'), 'echo x >> "$HOME/rc-read"\n');
    const launcherEnv: NodeJS.ProcessEnv = { ...env, HOME: personal };
    delete launcherEnv.SHLVL;
    const c = await connect({ env: launcherEnv });
    await info(env);
    const sandbox = uniqueName('rc');
    await c.call('createSandbox', { name: sandbox, backend: 'local' });
    const r = await c.call('exec', { sandbox, command: 'echo "home=$HOME"' });
    expect(r.stdout).toBe(`home=${personal}\n`);
    expect(existsSync(join(personal, 'rc-read'))).toBe(false);
    await c.call('removeSandbox', { name: sandbox, force: true });
    await c.close();
  });
});
