/**
 * The checkpoint commands as a user runs them: the real bin, one process per call, real Docker —
 * including a checkpoint whose process is killed in the middle (the next start lists nothing half-done).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from './helpers.js';

const BIN = resolve(import.meta.dirname, '../../bin/sandbox-desk.js');

function docker(...args: string[]): string {
  const r = spawnSync('docker', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`docker ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}
/** The container of a sandbox of this test (its unique name is the marker). */
const containerOf = (sandbox: string) => docker('ps', '-aq', '--filter', `label=io.sandbox-desk.sandbox=${sandbox}`).trim();
const paused = (container: string) => docker('inspect', '-f', '{{.State.Paused}}', container).trim() === 'true';
const imagesLabelled = (id: string) =>
  docker('images', '-q', '--filter', `label=io.sandbox-desk.checkpoint=${id}`).trim().split('\n').filter(Boolean);

describe('sandbox-desk checkpoint commands', () => {
  let home: string;
  const name = uniqueName('cck');
  const killedIds: string[] = [];
  const cli = (...args: string[]) => {
    const r = spawnSync(process.execPath, [BIN, ...args], {
      env: { ...process.env, SANDBOX_DESK_HOME: home },
      encoding: 'utf8',
      timeout: 180_000,
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr, json: () => JSON.parse(r.stdout) as unknown };
  };
  beforeAll(() => {
    home = mkdtempSync(join(tmpdir(), 'sdesk-cck-'));
  });
  afterAll(() => {
    for (const c of (cli('checkpoint', 'list', '--json').json() as Array<{ id: string }>) ?? []) cli('checkpoint', 'rm', c.id);
    // Only when a test failed: what it made, by its label (the app removes these itself).
    for (const id of killedIds) {
      const ids = spawnSync('docker', ['images', '-q', '--filter', `label=io.sandbox-desk.checkpoint=${id}`], {
        encoding: 'utf8',
      }).stdout.trim();
      if (ids) spawnSync('docker', ['rmi', '-f', ...ids.split('\n')]);
    }
    cli('sandbox', 'rm', name, '--force');
    rmSync(home, { recursive: true, force: true });
  });

  it('checkpoint → list → restore → pwd, fork refusals, pause/resume, rm', () => {
    expect(cli('sandbox', 'create', name, '--backend', 'docker').code).toBe(0);
    expect(cli('exec', name, '--session', 'agent', '--', 'mkdir -p ~/project && cd ~/project && echo x > f').code).toBe(0);
    const made = cli('sandbox', 'checkpoint', name, '--label', 'before', '--json');
    expect(made.code, made.stderr).toBe(0);
    const { checkpoint } = made.json() as { checkpoint: { id: string; label: string } };
    expect(checkpoint.label).toBe('before');
    const listed = cli('checkpoint', 'list', name);
    expect(listed.stdout).toMatch(new RegExp(`${checkpoint.id}\\s+${name}\\s+before`));

    expect(cli('exec', name, '--session', 'agent', '--', 'cd ~ && rm -rf ~/project').code).toBe(0);
    const restored = cli('sandbox', 'restore', name, checkpoint.id);
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.stdout).toMatch(/Restored .* to checkpoint/);
    const pwd = cli('exec', name, '--session', 'agent', '--json', '--', 'pwd');
    expect(pwd.json()).toMatchObject({ stdout: '/home/agent/project\n', cwdObserved: true });
    expect(cli('session', 'list', name).stdout).toMatch(/RESTORED FROM[\s\S]*agent .* /);

    for (const count of ['0', '100']) {
      const r = cli('sandbox', 'fork', name, checkpoint.id, '--as', 'nope', '--count', count);
      expect(r.code).toBe(125);
      expect(r.stderr).toMatch(/1 to 20/);
    }
    const taken = cli('sandbox', 'fork', name, checkpoint.id, '--as', name);
    expect(taken.code).toBe(125);
    expect(taken.stderr).toMatch(/already exists/);

    expect(cli('sandbox', 'pause', name).stdout).toBe(`${name}: paused\n`);
    expect(cli('sandbox', 'list').stdout).toMatch(new RegExp(`${name}\\s+\\S+\\s+paused`));
    expect(cli('sandbox', 'resume', name).stdout).toBe(`${name}: running\n`);
    expect(cli('checkpoint', 'rm', checkpoint.id).code).toBe(0);
    expect(cli('checkpoint', 'list', name, '--json').json()).toEqual([]);
  });

  it("an image of this data dir's checkpoints with no record (made after a cleanup) is removed by the next checkpoint call", () => {
    const container = containerOf(name);
    const instance = docker('inspect', '-f', '{{index .Config.Labels "io.sandbox-desk.instance"}}', container).trim();
    // What a commit that outlived its killed caller and that caller's cleanup leaves: labelled, no record.
    const stray = `stray${Date.now().toString(36)}`;
    killedIds.push(stray);
    docker(
      'commit',
      '--change',
      `LABEL io.sandbox-desk.checkpoint=${stray}`,
      '--change',
      `LABEL io.sandbox-desk.instance=${instance}`,
      container,
    );
    // Another data dir's, same labels but its own instance: not this one's to touch.
    const foreign = `foreign${Date.now().toString(36)}`;
    killedIds.push(foreign);
    docker(
      'commit',
      '--change',
      `LABEL io.sandbox-desk.checkpoint=${foreign}`,
      '--change',
      'LABEL io.sandbox-desk.instance=someoneelse',
      container,
    );
    expect(imagesLabelled(stray)).not.toEqual([]);
    const list = cli('checkpoint', 'list', '--json');
    expect(list.code, list.stderr).toBe(0);
    expect(imagesLabelled(stray)).toEqual([]);
    expect(imagesLabelled(foreign)).not.toEqual([]);
  });

  it('a checkpoint killed mid-commit is never listed, and the next call leaves no image of it, even one the engine finished later', async () => {
    // Something to commit that takes a few seconds: longer than the next CLI call takes to start.
    expect(cli('exec', name, '--', 'head -c 512M /dev/urandom > ~/big').code).toBe(0);
    const container = containerOf(name);
    const child = spawn(process.execPath, [BIN, 'sandbox', 'checkpoint', name], { env: { ...process.env, SANDBOX_DESK_HOME: home } });
    let stderr = '';
    const id = await new Promise<string>((resolveId, reject) => {
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        const m = /sandbox-desk\/checkpoint:([a-z0-9]+)/.exec(stderr);
        if (m) resolveId(m[1]!);
      });
      child.on('exit', () => reject(new Error(`the checkpoint ended before its commit step: ${stderr}`)));
    });
    killedIds.push(id);
    // The engine has the commit (it pauses the container for it): kill the process that makes it now,
    // mid-commit — the service, since the CLI is its client (issue 34) — and the CLI with it.
    await expect.poll(() => paused(container), { timeout: 10_000, interval: 20 }).toBe(true);
    const service = (cli('service', 'status', '--json').json() as { pid: number }).pid;
    process.kill(service, 'SIGKILL');
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const list = cli('checkpoint', 'list', '--json');
    expect(list.code, list.stderr).toBe(0);
    expect((list.json() as Array<{ id: string }>).map((c) => c.id)).not.toContain(id);
    // The engine is done with the commit (bounded: a stuck one fails here, it does not hang) and made nothing that stays.
    await expect.poll(() => paused(container), { timeout: 60_000, interval: 200 }).toBe(false);
    expect(imagesLabelled(id)).toEqual([]);
    // The record and its folder are gone, not only hidden.
    const again = cli('checkpoint', 'rm', id);
    expect(again.code).toBe(125);
    expect(again.stderr).toMatch(/no checkpoint/);
    // The sandbox kept running.
    expect(cli('exec', name, '--', 'echo alive').stdout).toBe('alive\n');
  });
});
