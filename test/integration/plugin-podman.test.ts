/**
 * The in-tree `podman` plugin against the real podman engine (rootful, on this machine), loaded like a
 * third-party plugin, in both isolation modes. Its declared home `/home/agent` looks like a host path:
 * the container guard must keep a cd under it because the backend declared it (seed 001's pitfall).
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PluginIsolation } from '../../src/sandbox/plugins/plugin-settings.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

const PODMAN_PLUGIN = fileURLToPath(new URL('../../plugins/podman', import.meta.url));

beforeAll(() => {
  try {
    execFileSync('podman', ['image', 'exists', 'localhost/sandbox-desk/base:latest'], { stdio: 'pipe' });
  } catch {
    throw new Error('the podman plugin test needs podman and localhost/sandbox-desk/base:latest: run `npm run setup`');
  }
});

describe.each(['in-process', 'host'] as PluginIsolation[])('podman plugin, isolation %s', (isolation) => {
  let t: TestDesk;
  const sb = uniqueName(`pod-${isolation === 'host' ? 'h' : 'i'}`);
  let container = '';

  beforeAll(async () => {
    t = tempDesk({ plugins: { isolation, paths: [PODMAN_PLUGIN], scanDataDir: false } });
  });
  afterAll(async () => {
    await t?.dispose();
    // dispose removed it through the plugin: nothing of ours is left in podman.
    if (container) expect(execFileSync('podman', ['ps', '-a', '-q', '--filter', `id=${container}`], { encoding: 'utf8' }).trim()).toBe('');
  });

  it('creates a real podman container; the declared absolute home is where commands start', async () => {
    const t0 = Date.now();
    const r = await t.desk.createSandbox({ name: sb, backend: 'podman' });
    console.log(`[measure] podman create+start+connect (${isolation}): ${Date.now() - t0} ms`);
    container = r.sandbox.backendRef!;
    expect(r.warnings).toEqual([]);
    expect(r.sandbox).toMatchObject({
      backend: 'podman',
      state: 'running',
      user: 'agent',
      declaredDefaultCwd: '/home/agent',
      home: '/home/agent',
      defaultCwd: '/home/agent',
      details: { engine: 'podman' },
    });
    expect(execFileSync('podman', ['inspect', '--format', '{{.State.Running}}', container], { encoding: 'utf8' }).trim()).toBe('true');
    const r1 = await t.desk.exec({ sandbox: sb, command: 'pwd; id -un' });
    expect(r1.stdout).toBe('/home/agent\nagent\n');
  });

  it('a cd under the declared home survives into later commands; root via -u root works', async () => {
    await t.desk.exec({ sandbox: sb, command: 'mkdir -p ~/work/app && cd ~/work/app' });
    const t0 = Date.now();
    expect((await t.desk.exec({ sandbox: sb, command: 'pwd' })).stdout).toBe('/home/agent/work/app\n');
    const t1 = Date.now();
    expect((await t.desk.exec({ sandbox: sb, command: 'pwd', mode: 'oneshot' })).stdout).toBe('/home/agent/work/app\n');
    console.log(`[measure] podman exec: session shell ${t1 - t0} ms, one-shot ${Date.now() - t1} ms (${isolation})`);
    expect((await t.desk.exec({ sandbox: sb, command: 'id -u', user: 'root', session: 'root' })).stdout).toBe('0\n');
  });

  it('a terminal through podman exec -it', async () => {
    const { terminal, cwd } = await t.desk.io.openTerminal({ sandbox: sb, session: 'tty', cols: 90, rows: 20 });
    expect(cwd).toBe('/home/agent');
    let screen = '';
    terminal.attach({ send: (d, done) => ((screen += d.toString()), done()), bufferedAmount: 0 });
    terminal.write('cd /etc && pwd && stty size\r');
    await expect.poll(() => screen, { timeout: 15_000 }).toMatch(/\r\/etc\r\n20 90\r\n/);
    await expect.poll(() => t.desk.listSessions(sb).find((s) => s.key === 'tty')?.cwd, { timeout: 10_000 }).toBe('/etc');
    terminal.kill();
  });

  it('stop and start: a new incarnation, the home measured again; stopped says so', async () => {
    const before = await t.desk.inspectSandbox(sb);
    await t.desk.stopSandbox(sb);
    await expect(t.desk.exec({ sandbox: sb, command: 'true' })).rejects.toMatchObject({ code: 'sandbox_not_running' });
    await t.desk.startSandbox(sb);
    const after = await t.desk.inspectSandbox(sb);
    expect(after).toMatchObject({ state: 'running', home: '/home/agent' });
    expect(before.state).toBe('running');
    expect((await t.desk.exec({ sandbox: sb, command: 'pwd' })).stdout).toBe('/home/agent/work/app\n');
  });
});
