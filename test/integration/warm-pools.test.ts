import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/platform/config.js';
import { RfbClient } from '../../src/desktop/rfb/rfb-client.js';
import { transportFromStreams } from '../../src/desktop/rfb/transport.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

/*
 * Warm pools against the real Docker engine (issue 37): a create that matches a pool claims a running
 * sandbox (docker and desktop), its command's cwd measured; a pooled container removed behind the app's
 * back is never handed out and is replaced; the pool's image retagged to another build is drained and
 * refilled. One core, pools filled once in beforeAll (a plain and a desktop pool, one each).
 */

const DESKTOP_IMAGE = 'sandbox-desk/desktop:latest';
let t: TestDesk;
// The plain pool uses a tag of its own, so the test can "rebuild" it (retag) without touching the app's image.
const TAG = `sandbox-desk/pool-test:${process.pid}`;
const docker = (...args: string[]): string => execFileSync('docker', args, { encoding: 'utf8' }).trim();

beforeAll(async () => {
  docker('tag', 'sandbox-desk/base:latest', TAG);
  t = tempDesk({
    plugins: false,
    config: parseConfig({
      pools: {
        templates: [
          { image: TAG, size: 1 },
          { image: DESKTOP_IMAGE, desktop: true, size: 1 },
        ],
      },
    }),
  });
  await t.desk.pools.start();
  await t.desk.pools.settled();
  expect(t.desk.pools.list().pools.map((p) => [p.ready, p.state, p.warning])).toEqual([
    [1, 'full', null],
    [1, 'full', null],
  ]);
}, 120_000);

afterAll(async () => {
  await t?.desk.pools.drain().catch(() => undefined);
  await t?.dispose();
  try {
    docker('rmi', TAG);
  } catch {
    /* already gone */
  }
}, 60_000);

describe('warm pools (real Docker)', () => {
  it('a matching create claims the ready sandbox: warm, named, listed, its command’s cwd measured; the pooled one was never listed', async () => {
    expect(await t.desk.listSandboxes()).toEqual([]);
    // A pooled sandbox is nobody's: no call reaches it by its name.
    const member = t.desk.store.pools.list()[0]!.sandbox;
    await expect(t.desk.exec({ sandbox: member, command: 'true' })).rejects.toThrow(/no sandbox named/);
    // The default session's shell was opened while the sandbox waited in the pool: its bash runs already.
    const bashBefore = docker('exec', t.desk.store.sandboxes.get(member)!.backendRef!, 'ps', '-eo', 'pid=,comm=')
      .split('\n')
      .filter((l) => / bash$/.test(l))
      .map((l) => l.trim().split(' ')[0]);
    expect(bashBefore.length).toBeGreaterThan(0);
    const name = uniqueName('warm');
    const r = await t.desk.createSandbox({ name, backend: 'docker', image: TAG, defaultCwd: '/tmp' });
    expect(r).toMatchObject({ warm: true, sandbox: { name, state: 'running', defaultCwd: '/tmp' } });
    const home = r.sandbox.home!;
    expect(home).toMatch(/^\/home\//);
    expect((await t.desk.listSandboxes()).map((s) => s.name)).toEqual([name]);
    expect(docker('inspect', '-f', '{{.Name}} {{.HostConfig.CpuShares}}', r.sandbox.backendRef!)).toBe(
      `/sdesk-${t.desk.store.instanceId}-${name} 1024`,
    );
    // The first command starts in the declared default cwd; the cwd it ends in is measured and recorded.
    expect(await t.desk.exec({ sandbox: name, command: 'pwd && cd ~' })).toMatchObject({
      exitCode: 0,
      stdout: '/tmp\n',
      cwdObserved: true,
      cwd: home,
    });
    expect((await t.desk.exec({ sandbox: name, command: 'pwd' })).stdout).toBe(`${home}\n`);
    // Those commands ran in the shell opened ahead (no shell started at the claim).
    expect(bashBefore).toContain((await t.desk.exec({ sandbox: name, command: 'echo $$' })).stdout.trim());
    await t.desk.removeSandbox(name, { force: true });
  }, 30_000);

  it('a request the pool cannot serve is created cold and says why', async () => {
    const name = uniqueName('cold');
    const r = await t.desk.createSandbox({ name, backend: 'docker', image: TAG, env: { A: '1' } });
    expect(r).toMatchObject({ warm: false, warmReason: expect.stringMatching(/--env/) });
    await t.desk.removeSandbox(name, { force: true });
  }, 30_000);

  it('a claimed desktop sandbox has its desktop running: the first frame comes without a start', async () => {
    // The pooled desktop waits frozen (no CPU taken from a running one); the claim thaws it.
    const desktopKey = t.desk.pools.list().pools[1]!.key;
    const waiting = t.desk.store.pools.list().find((m) => m.template === desktopKey)!;
    expect(docker('inspect', '-f', '{{.State.Paused}}', t.desk.store.sandboxes.get(waiting.sandbox)!.backendRef!)).toBe('true');
    const name = uniqueName('wdesk');
    const r = await t.desk.createSandbox({ name, backend: 'docker', image: DESKTOP_IMAGE, options: { desktop: 'true' } });
    expect(r.warm).toBe(true);
    expect(docker('inspect', '-f', '{{.State.Paused}} {{.HostConfig.CpuShares}}', r.sandbox.backendRef!)).toBe('false 1024');
    // The first stream is the one opened at the fill and handed over with the desktop: no relay started
    // now (none opened), no probe; its RFB session starts now, so its first frame is the screen as it is.
    let opened = 0;
    const counting = t.desk.desktop.onStreamOpened(() => opened++);
    const stream = await t.desk.desktop.openScreenStream(name);
    counting.dispose();
    expect(opened).toBe(0);
    const rfb = await RfbClient.connect(transportFromStreams(stream.stdout, stream.stdin, () => stream.kill()));
    await rfb.requestUpdate(false);
    const status = await t.desk.desktop.status(name);
    expect(status).toMatchObject({ running: true });
    expect(`${rfb.width}x${rfb.height}`).toBe(status.geometry);
    rfb.close();
    stream.kill();
    const out = await t.desk.exec({ sandbox: name, command: 'pwd' });
    expect(out).toMatchObject({ exitCode: 0, cwdObserved: true });
    // The desktop pool's refill is not needed by the tests below: drained, so they do not wait for it.
    await t.desk.pools.drain({ image: DESKTOP_IMAGE, desktop: true });
    await t.desk.removeSandbox(name, { force: true });
  }, 60_000);

  it('a pooled container removed behind the app’s back is never handed out, and is replaced', async () => {
    await t.desk.pools.settled();
    const key = t.desk.pools.list().pools[0]!.key;
    const member = t.desk.store.pools.list().find((m) => m.state === 'ready' && m.template === key)!;
    docker('rm', '-f', t.desk.store.sandboxes.get(member.sandbox)!.backendRef!);
    const name = uniqueName('after-rm');
    const r = await t.desk.createSandbox({ name, backend: 'docker', image: TAG });
    expect(r).toMatchObject({ warm: false, warmReason: expect.stringMatching(/dead or of an older image/) });
    await t.desk.removeSandbox(name, { force: true });
    await t.desk.pools.settled();
    expect(t.desk.pools.list().pools[0]).toMatchObject({ ready: 1 });
    expect(t.desk.store.pools.get(member.sandbox)).toBeUndefined();
  }, 60_000);

  it('the image rebuilt while the pool is full: drained and refilled, no sandbox of the old image handed out (image ids compared)', async () => {
    await t.desk.pools.settled();
    const oldId = docker('image', 'inspect', '-f', '{{.Id}}', TAG);
    // "Rebuilt": the tag now names another image.
    execFileSync('docker', ['build', '-q', '-t', TAG, '-'], { input: `FROM sandbox-desk/base:latest\nLABEL rebuilt=${process.pid}\n` });
    const newId = docker('image', 'inspect', '-f', '{{.Id}}', TAG);
    expect(newId).not.toBe(oldId);
    const name = uniqueName('rebuilt');
    const r = await t.desk.createSandbox({ name, backend: 'docker', image: TAG });
    expect(docker('inspect', '-f', '{{.Image}}', r.sandbox.backendRef!)).toBe(newId);
    await t.desk.removeSandbox(name, { force: true });
    await t.desk.pools.settled();
    const [pool] = t.desk.pools.list().pools;
    expect(pool).toMatchObject({ ready: 1 });
    const member = t.desk.store.pools.list().find((m) => m.template === pool!.key)!;
    expect(docker('inspect', '-f', '{{.Image}}', t.desk.store.sandboxes.get(member.sandbox)!.backendRef!)).toBe(newId);
  }, 60_000);
});
