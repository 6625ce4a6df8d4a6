/**
 * The checkpoint capability across the plugin boundary: the in-tree podman plugin implements it with
 * `podman commit` / `podman pause`, against real podman, in both isolation modes (in-process through
 * the guard; the isolated host through the RPC).
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PluginIsolation } from '../../src/sandbox/plugins/plugin-settings.js';
import { rejectsWith } from '../expect-error.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

const PODMAN_PLUGIN = fileURLToPath(new URL('../../plugins/podman', import.meta.url));
const podman = (...args: string[]) => execFileSync('podman', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

beforeAll(() => {
  try {
    execFileSync('podman', ['image', 'exists', 'localhost/sandbox-desk/base:latest'], { stdio: 'pipe' });
  } catch {
    throw new Error('the podman plugin test needs podman and localhost/sandbox-desk/base:latest: run `npm run setup`');
  }
});

describe.each(['in-process', 'host'] as PluginIsolation[])('podman plugin checkpoints, isolation %s', (isolation) => {
  let t: TestDesk;
  const sb = uniqueName(`pck-${isolation === 'host' ? 'h' : 'i'}`);

  beforeAll(() => {
    t = tempDesk({ plugins: { isolation, paths: [PODMAN_PLUGIN], scanDataDir: false } });
  });
  afterAll(async () => {
    const instance = t.desk.store.instanceId;
    for (const id of t.desk.store.checkpoints.ids()) await t.desk.checkpoints.remove(id).catch(() => undefined);
    await t?.dispose();
    // Nothing of this run is left in podman: no checkpoint image, not even an untagged one.
    expect(
      podman(
        'images',
        '-a',
        '-q',
        '--filter',
        `label=io.sandbox-desk.instance=${instance}`,
        '--filter',
        'label=io.sandbox-desk.checkpoint',
      ),
    ).toBe('');
  });

  it('checkpoint → delete → restore brings the file back, the session at its project; a fork is independent', async () => {
    await t.desk.createSandbox({ name: sb, backend: 'podman' });
    await t.desk.exec({ sandbox: sb, session: 'agent', command: 'mkdir -p ~/project && cd ~/project && echo hi > f.txt' });
    const progress: string[] = [];
    const { checkpoint } = await t.desk.checkpoints.checkpoint({ sandbox: sb, label: 'p' }, { onProgress: (e) => progress.push(e.step) });
    expect(progress).toContain('commit');
    expect(checkpoint).toMatchObject({ backend: 'podman', memory: false, broken: false });
    expect(
      podman(
        'image',
        'inspect',
        '--format',
        '{{index .Labels "io.sandbox-desk.checkpoint"}}',
        `localhost/sandbox-desk/checkpoint:${checkpoint.id}`,
      ),
    ).toBe(checkpoint.id);

    await t.desk.exec({ sandbox: sb, session: 'agent', command: 'cd ~ && rm -rf ~/project' });
    const r = await t.desk.checkpoints.restore(sb, checkpoint.id);
    expect(r.sessions.find((s) => s.key === 'agent')).toMatchObject({ cwd: '/home/agent/project', restoredFrom: checkpoint.id });
    const pwd = await t.desk.exec({ sandbox: sb, session: 'agent', command: 'pwd; cat f.txt' });
    expect(pwd).toMatchObject({ stdout: '/home/agent/project\nhi\n', cwdObserved: true });

    // Removing the checkpoint the sandbox now runs from must leave the sandbox running (podman's rmi -f would not).
    await t.desk.checkpoints.remove(checkpoint.id).catch(() => undefined);
    expect((await t.desk.exec({ sandbox: sb, command: 'echo up' })).stdout).toBe('up\n');
    const again = await t.desk.checkpoints.checkpoint({ sandbox: sb });
    const fork = uniqueName('pfk');
    const f = await t.desk.checkpoints.fork({ sandbox: sb, checkpoint: again.checkpoint.id, as: fork });
    expect(f.sandboxes[0]).toMatchObject({ name: fork, state: 'running', backend: 'podman' });
    await t.desk.exec({ sandbox: fork, session: 'agent', command: 'rm f.txt' });
    expect((await t.desk.exec({ sandbox: sb, session: 'agent', command: 'cat f.txt' })).stdout).toBe('hi\n');
    await t.desk.removeSandbox(fork, { force: true });
  });

  it('pause/resume, --memory refused with the reason, a deleted image listed broken', async () => {
    expect((await t.desk.checkpoints.pause(sb)).state).toBe('paused');
    expect((await t.desk.checkpoints.resume(sb)).state).toBe('running');
    const m = await rejectsWith(t.desk.checkpoints.checkpoint({ sandbox: sb, memory: true }), 'unsupported');
    expect(m.message).toContain('disk only');
    const { checkpoint } = await t.desk.checkpoints.checkpoint({ sandbox: sb });
    podman('image', 'rm', '-f', `localhost/sandbox-desk/checkpoint:${checkpoint.id}`);
    const listed = (await t.desk.checkpoints.list(sb)).find((c) => c.id === checkpoint.id)!;
    expect(listed).toMatchObject({ broken: true });
    await rejectsWith(t.desk.checkpoints.restore(sb, checkpoint.id), 'not_found');
  });
});
