/**
 * The egress proxy's lifetime under the service (issue 34, item 5): it runs while an allow sandbox
 * does; a `kill -9` of the service leaves it serving, and the next service adopts that proxy (no second
 * one) and keeps it alive (a proxy that dies is started again); it stops, its pump with it, once the
 * last allow sandbox is removed. Real parts: the built bin's service (`npm run build`), one docker
 * sandbox, the compiled pump. Only processes of this test's data dir are looked at (the proxy's pid
 * file under it, its children, and /proc entries whose command line names it).
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientServicePaths, connect, probeService, type ServiceClient } from '../../src/client/connect.js';
import { uniqueName } from './helpers.js';

const home = mkdtempSync(join(tmpdir(), 'sdesk-proxy-life-'));
// No XDG_RUNTIME_DIR: the service's socket is in <home>/run/, private to this test.
const env: NodeJS.ProcessEnv = { ...process.env, SANDBOX_DESK_HOME: home, XDG_RUNTIME_DIR: '' };
delete env.SANDBOX_DESK_TEST_VERSION;
delete env.SANDBOX_DESK_SERVICE_IDLE_SECONDS;
const sandbox = uniqueName('plife');
/** Every service and proxy process this test saw: ended in afterAll if still there. */
const seen = new Set<number>();

/** Running (a zombie waiting to be reaped has stopped running). */
function running(pid: number | null): boolean {
  if (pid === null) return false;
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

/** The pid in this data dir's proxy lock, when its process runs. */
function proxyPid(): number | null {
  try {
    const pid = Number(readFileSync(join(home, 'network', 'proxy.pid'), 'utf8').trim());
    return running(pid) ? pid : null;
  } catch {
    return null;
  }
}

/** The proxy daemon's pump (its child running the compiled egress-pump), once it started it. */
async function pumpOf(daemon: number): Promise<number> {
  const find = (): number | undefined => {
    let children: number[];
    try {
      children = readFileSync(`/proc/${daemon}/task/${daemon}/children`, 'utf8').trim().split(/\s+/).map(Number);
    } catch {
      return undefined;
    }
    return children.find((c) => {
      try {
        return readlinkSync(`/proc/${c}/exe`).endsWith('egress-pump');
      } catch {
        return false;
      }
    });
  };
  // The daemon takes its lock (the pid file) before it starts its pump.
  await until(`the proxy daemon ${daemon} to start its pump`, () => find() !== undefined, 5_000);
  const pump = find()!;
  seen.add(pump);
  return pump;
}

/** Proxy daemons serving this data dir: their command line is `… proxy-daemon.js <home>`. */
function proxiesOfThisHome(): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (argv.some((a) => /proxy-daemon\.(js|ts)$/.test(a)) && argv.includes(home) && running(Number(entry))) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

async function servicePid(): Promise<number> {
  const i = await probeService(clientServicePaths({ env }).socketPath);
  if (!i) throw new Error('no service answers');
  seen.add(i.pid);
  return i.pid;
}

async function until(what: string, ok: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting (${ms} ms): ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('the egress proxy lives with its allow sandboxes, across a service kill -9', () => {
  let client: ServiceClient;

  beforeAll(async () => {
    client = await connect({ env });
    await servicePid();
    await client.call('createSandbox', { name: sandbox, backend: 'docker', network: 'allow', allow: ['example.com'] });
  }, 120_000);

  afterAll(async () => {
    const c = await connect({ env }).catch(() => null);
    await c?.call('removeSandbox', { name: sandbox, force: true }).catch(() => undefined);
    await c?.close();
    for (const pid of seen) if (running(pid)) process.kill(pid, 'SIGTERM');
    await until('the processes this test started to end', () => [...seen].every((p) => !running(p)), 15_000).catch(() => {
      for (const pid of seen) if (running(pid)) process.kill(pid, 'SIGKILL');
    });
    rmSync(home, { recursive: true, force: true });
  }, 60_000);

  it('kill -9 of the service: the next one adopts the running proxy (no second one) and restarts it when it dies', async () => {
    const proxy = proxyPid();
    expect(proxy).not.toBeNull();
    seen.add(proxy!);
    const pump = await pumpOf(proxy!);
    expect(proxiesOfThisHome()).toEqual([proxy]);

    const first = await servicePid();
    process.kill(first, 'SIGKILL');
    // Gone, not only a zombie: a zombie leader's other threads may still hold its socket open for a moment.
    await until('the killed service to be gone', () => !existsSync(`/proc/${first}`), 5_000);
    // The proxy is not the service's child: it goes on serving the sandbox meanwhile.
    expect(running(proxy) && running(pump)).toBe(true);

    // The next client starts a new service, which finds the proxy through its lock and keeps it.
    await client.close();
    client = await connect({ env });
    const second = await servicePid();
    expect(second).not.toBe(first);
    expect((await client.call('inspectSandbox', { name: sandbox })).network).toEqual({ mode: 'allow', allow: ['example.com'] });
    expect(proxyPid()).toBe(proxy);
    expect(proxiesOfThisHome()).toEqual([proxy]);

    // Adopted, not merely left alone: when it dies, the new service starts another (its sandbox needs it).
    process.kill(proxy!, 'SIGKILL');
    await until('the new service to restart the proxy', () => proxyPid() !== null && proxyPid() !== proxy, 10_000);
    const restarted = proxyPid()!;
    seen.add(restarted);
    await pumpOf(restarted);
    // The old pump died with its daemon (PR_SET_PDEATHSIG); one proxy serves the data dir.
    await until('the killed proxy’s pump to exit', () => !running(pump), 5_000);
    expect(proxiesOfThisHome()).toEqual([restarted]);
  }, 60_000);

  it('removing the last allow sandbox stops the proxy and its pump within seconds', async () => {
    const proxy = proxyPid();
    expect(proxy).not.toBeNull();
    const pump = await pumpOf(proxy!);
    await client.call('removeSandbox', { name: sandbox, force: true });
    const t0 = Date.now();
    await until('the proxy and its pump to exit', () => !running(proxy) && !running(pump), 8_000);
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(proxyPid()).toBeNull();
    expect(proxiesOfThisHome()).toEqual([]);
    // The service stays up and does not start it again for nobody.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(proxiesOfThisHome()).toEqual([]);
    await client.close();
  }, 60_000);
});
