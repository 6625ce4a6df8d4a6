/**
 * Issue 35, a smaller defect: the egress proxy daemon and its pump kept running after the last allow
 * sandbox was gone. They stop once no sandbox needs them (removed, or switched to another mode), and
 * are started again on demand. Real processes, started by this test on a data dir of its own; only
 * their pids are looked at.
 */
import { existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writePolicies, socketDirOf, SOCKET_NAME } from '../../src/sandbox/network/network-files.js';
import { ensureProxy } from '../../src/sandbox/network/proxy-supervisor.js';

/** Running (a zombie waiting to be reaped has stopped running). */
function running(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

/** The daemon's pump: its child running dist/native/egress-pump. */
function pumpOf(daemon: number): number {
  const children = readFileSync(`/proc/${daemon}/task/${daemon}/children`, 'utf8').trim().split(/\s+/).map(Number);
  const pump = children.find((c) => {
    try {
      return readlinkSync(`/proc/${c}/exe`).endsWith('egress-pump');
    } catch {
      return false;
    }
  });
  if (!pump) throw new Error(`the proxy daemon ${daemon} has no pump among its children ${children.join(' ')}`);
  return pump;
}

async function until(what: string, check: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('the egress proxy lives only while a sandbox needs it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'proxy-life-'));
  const started: number[] = [];
  afterAll(() => {
    for (const pid of started) if (running(pid)) process.kill(pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  const start = async (): Promise<{ daemon: number; pump: number }> => {
    const { pid } = await ensureProxy(dir, ['sb']);
    started.push(pid);
    const pump = pumpOf(pid);
    started.push(pump);
    return { daemon: pid, pump };
  };

  it('stops, its pump with it, when the last allow sandbox is removed or switched offline; starts again on demand', async () => {
    writePolicies(dir, { sb: { mode: 'allow', allow: ['localhost'] } });
    const first = await start();
    expect(existsSync(join(socketDirOf(dir, 'sb'), SOCKET_NAME))).toBe(true);

    // The sandbox is removed (its policy goes): nothing needs the proxy.
    writePolicies(dir, {});
    await until(
      'the proxy and its pump to exit after the last sandbox was removed',
      () => !running(first.daemon) && !running(first.pump),
      8_000,
    );
    expect(existsSync(join(dir, 'network', 'proxy.pid'))).toBe(false);

    // Needed again: started again.
    writePolicies(dir, { sb: { mode: 'allow', allow: ['localhost'] } });
    const second = await start();
    expect(second.daemon).not.toBe(first.daemon);
    expect(running(second.pump)).toBe(true);

    // Switched away from allow: it goes again.
    writePolicies(dir, { sb: { mode: 'offline', allow: ['localhost'] } });
    await until(
      'the proxy and its pump to exit after the sandbox went offline',
      () => !running(second.daemon) && !running(second.pump),
      8_000,
    );
    expect(readFileSync(join(dir, 'network', 'proxy.log'), 'utf8')).toMatch(/exiting: no sandbox needs it/);
  });
});
