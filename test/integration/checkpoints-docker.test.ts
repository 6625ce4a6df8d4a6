import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejectsWith } from '../expect-error.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

function docker(...args: string[]): string {
  return execFileSync('docker', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** Issue 15's "Done means" against the real Docker engine. */
describe('docker checkpoints, restore, fork and pause (real engine)', () => {
  let t: TestDesk;
  beforeAll(() => {
    t = tempDesk({ plugins: false });
  });
  afterAll(async () => {
    // Checkpoint images are ours: every one this test made goes, whatever happened.
    const instance = t.desk.store.instanceId;
    for (const id of t.desk.store.checkpoints.ids()) await t.desk.checkpoints.remove(id).catch(() => undefined);
    await t.dispose();
    // No checkpoint image of this run is left, not even untagged (one a restored container still used when its checkpoint went).
    expect(
      docker(
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

  it('cd into a project, write, checkpoint, delete the project; restore brings it back and the next pwd is the project', async () => {
    const name = uniqueName('ck');
    const { sandbox } = await t.desk.createSandbox({ name, backend: 'docker', options: { memory: '256' } });
    const hc0 = docker(
      'inspect',
      '-f',
      '{{json .HostConfig.CapDrop}} {{.HostConfig.Memory}} {{json .HostConfig.SecurityOpt}}',
      sandbox.backendRef!,
    );
    await t.desk.exec({ sandbox: name, session: 'agent', command: 'mkdir -p ~/project && cd ~/project && echo hello > notes.txt' });

    const progress: string[] = [];
    const { checkpoint } = await t.desk.checkpoints.checkpoint(
      { sandbox: name, label: 'before' },
      { onProgress: (e) => progress.push(e.step) },
    );
    expect(progress).toContain('commit');
    expect(checkpoint).toMatchObject({ sandbox: name, label: 'before', memory: false, broken: false });
    expect(checkpoint.sizeBytes).toBeGreaterThan(0);
    // A local image, labelled ours.
    const image = `sandbox-desk/checkpoint:${checkpoint.id}`;
    expect(docker('image', 'inspect', '-f', '{{index .Config.Labels "io.sandbox-desk.checkpoint"}}', image)).toBe(checkpoint.id);
    expect(docker('image', 'inspect', '-f', '{{index .Config.Labels "io.sandbox-desk.managed"}}', image)).toBe('true');

    await t.desk.exec({ sandbox: name, session: 'agent', command: 'cd ~ && rm -rf ~/project' });
    const r = await t.desk.checkpoints.restore(name, checkpoint.id);
    expect(r.sandbox.state).toBe('running');
    expect(r.sandbox.backendRef).not.toBe(sandbox.backendRef);
    expect(r.sessions.find((s) => s.key === 'agent')).toMatchObject({ cwd: '/home/agent/project', restoredFrom: checkpoint.id });

    const pwd = await t.desk.exec({ sandbox: name, session: 'agent', command: 'pwd; cat notes.txt; id -un' });
    expect(pwd).toMatchObject({ stdout: '/home/agent/project\nhello\nagent\n', cwdObserved: true, cwd: '/home/agent/project' });
    // Same name, labels and hardening as the provisioned container.
    const info = JSON.parse(docker('inspect', r.sandbox.backendRef!)) as Array<{
      Name: string;
      Config: { Labels: Record<string, string> };
    }>;
    expect(info[0]!.Name).toBe(`/sdesk-${t.desk.store.instanceId}-${name}`);
    expect(info[0]!.Config.Labels['io.sandbox-desk.sandbox']).toBe(name);
    expect(
      docker(
        'inspect',
        '-f',
        '{{json .HostConfig.CapDrop}} {{.HostConfig.Memory}} {{json .HostConfig.SecurityOpt}}',
        r.sandbox.backendRef!,
      ),
    ).toBe(hc0);
  });

  it('three forks of one checkpoint run commands independently and their session records diverge', async () => {
    const name = uniqueName('ck');
    await t.desk.createSandbox({ name, backend: 'docker' });
    await t.desk.exec({ sandbox: name, session: 'agent', command: 'mkdir -p ~/project && cd ~/project' });
    const { checkpoint } = await t.desk.checkpoints.checkpoint({ sandbox: name });
    const prefix = uniqueName('fk');
    const r = await t.desk.checkpoints.fork({ sandbox: name, checkpoint: checkpoint.id, as: prefix, count: 3 });
    const names = r.sandboxes.map((s) => s.name);
    expect(names).toEqual([1, 2, 3].map((i) => `${prefix}-${i}`));
    expect(new Set(r.sandboxes.map((s) => s.backendRef)).size).toBe(3);
    for (const [i, n] of names.entries()) {
      const first = await t.desk.exec({ sandbox: n, session: 'agent', command: `pwd; mkdir -p sub${i} && cd sub${i} && touch only-${i}` });
      expect(first.stdout).toBe('/home/agent/project\n');
    }
    const cwds = names.map((n) => t.desk.listSessions(n).find((s) => s.key === 'agent')!.cwd);
    expect(cwds).toEqual([0, 1, 2].map((i) => `/home/agent/project/sub${i}`));
    // Independent filesystems: fork 0's file is not in fork 1.
    const other = await t.desk.exec({ sandbox: names[1]!, command: 'ls /home/agent/project/sub0 2>&1 || echo none' });
    expect(other.stdout).toContain('none');
    expect(t.desk.listSessions(name).find((s) => s.key === 'agent')!.cwd).toBe('/home/agent/project');
    for (const n of names) await t.desk.removeSandbox(n, { force: true });
  });

  it('bad input and faults: another sandbox, a deleted image, a taken name, --count 0/100, --memory, stopped', async () => {
    const a = uniqueName('ck');
    const b = uniqueName('ck');
    await t.desk.createSandbox({ name: a, backend: 'docker' });
    await t.desk.createSandbox({ name: b, backend: 'docker', start: false });
    const { checkpoint } = await t.desk.checkpoints.checkpoint({ sandbox: a });

    await rejectsWith(t.desk.checkpoints.restore(b, checkpoint.id), 'refused');
    await rejectsWith(t.desk.checkpoints.fork({ sandbox: a, checkpoint: checkpoint.id, as: b }), 'name_taken');
    for (const count of [0, 100])
      await rejectsWith(t.desk.checkpoints.fork({ sandbox: a, checkpoint: checkpoint.id, as: 'x', count }), 'invalid_input');
    const mem = await rejectsWith(t.desk.checkpoints.checkpoint({ sandbox: a, memory: true }), 'unsupported');
    expect(mem.message).toMatch(/experimental|criu|CRIU/);

    const stopped = await t.desk.checkpoints.checkpoint({ sandbox: b });
    expect(stopped.warnings.map((w) => w.code)).toContain('checkpoint_disk_only');

    docker('rmi', '-f', `sandbox-desk/checkpoint:${checkpoint.id}`);
    const listed = (await t.desk.checkpoints.list(a)).find((c) => c.id === checkpoint.id)!;
    expect(listed.broken).toBe(true);
    expect(listed.brokenDetail).toContain('removed outside Sandbox Desk');
    const e = await rejectsWith(t.desk.checkpoints.restore(a, checkpoint.id), 'not_found');
    expect(e.message).toContain('broken');
    // The refused restore left the sandbox as it was.
    expect((await t.desk.exec({ sandbox: a, command: 'echo still' })).stdout).toBe('still\n');
  });

  it('pause freezes (state paused, commands refused with a hint), resume thaws, the shell survives', async () => {
    const name = uniqueName('ck');
    const { sandbox } = await t.desk.createSandbox({ name, backend: 'docker' });
    await t.desk.exec({ sandbox: name, command: 'cd /tmp' });
    expect((await t.desk.checkpoints.pause(name)).state).toBe('paused');
    expect(docker('inspect', '-f', '{{.State.Paused}}', sandbox.backendRef!)).toBe('true');
    expect((await t.desk.listSandboxes()).find((s) => s.name === name)!.state).toBe('paused');
    const e = await rejectsWith(t.desk.exec({ sandbox: name, command: 'true', mode: 'oneshot' }), 'sandbox_not_running');
    expect(e.hint).toContain('resume');
    expect((await t.desk.checkpoints.resume(name)).state).toBe('running');
    const r = await t.desk.exec({ sandbox: name, command: 'pwd' });
    expect(r.stdout).toBe('/tmp\n');
  });
});
