/**
 * Cancelling a create or a start, against the real parts: a Docker create cancelled at each of its
 * steps leaves no container and no record; a VM create cancelled during its (TCG) boot — right after
 * QEMU is running, so it costs seconds — leaves no VM directory, no QEMU process and no record, both
 * from the core (`cancelOperation`, what the window calls) and from the CLI (Ctrl-C).
 */
import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDesk, uniqueName, type TestDesk, qemuProcessesOf } from './helpers.js';

const SKIP_SLOW = process.env.SANDBOX_DESK_SKIP_SLOW === '1';
const BIN = resolve(import.meta.dirname, '../../bin/sandbox-desk.js');

/** Containers labelled as this test's sandbox in this data directory (running or not). */
function containersOf(instance: string, sandbox: string): string[] {
  const out = execFileSync(
    'docker',
    ['ps', '-aq', '--filter', `label=io.sandbox-desk.instance=${instance}`, '--filter', `label=io.sandbox-desk.sandbox=${sandbox}`],
    { encoding: 'utf8' },
  );
  return out.split('\n').filter(Boolean);
}

describe('cancelling long work', () => {
  let t: TestDesk;
  beforeAll(() => {
    t = tempDesk();
  });
  afterAll(async () => {
    await t.dispose();
  }, 120_000);

  for (const step of ['container', 'start'] as const) {
    it(`a docker create cancelled at its "${step}" step leaves no container and no record`, async () => {
      const name = uniqueName('cancel');
      const steps: string[] = [];
      const created = t.desk.createSandbox(
        { name, backend: 'docker' },
        {
          onProgress: (e) => {
            steps.push(e.step);
            if (e.step === step) t.desk.cancelOperation(name);
          },
        },
      );
      await expect(created).rejects.toMatchObject({ code: 'cancelled', message: `the create of sandbox ${name} was cancelled` });
      expect(steps).toContain(step);
      expect(containersOf(t.desk.store.instanceId, name)).toEqual([]);
      expect((await t.desk.listSandboxes()).map((s) => s.name)).not.toContain(name);
      expect(t.desk.sandboxProgress(name)).toMatchObject({ done: true, cancelled: true });
      // The name is free again.
      const again = await t.desk.createSandbox({ name, backend: 'docker', start: false });
      expect(again.sandbox.name).toBe(name);
    });
  }

  it('cancelling when nothing runs is refused with why', async () => {
    const name = uniqueName('idle');
    await t.desk.createSandbox({ name, backend: 'docker', start: false });
    expect(() => t.desk.cancelOperation(name)).toThrow(/nothing to cancel/);
  });

  describe.skipIf(SKIP_SLOW)('a VM create cancelled during its boot (one short TCG boot each)', () => {
    const vmDir = (name: string) => join(t.dataDir, 'qemu', 'vms', name);

    it('from the core (the window): no VM directory, no QEMU process, no record; the list said starting', async () => {
      const name = uniqueName('vmc');
      let stateWhileBooting: string | undefined;
      let cancelled!: () => void;
      const wasCancelled = new Promise<void>((r) => (cancelled = r));
      const created = t.desk.createSandbox(
        { name, backend: 'qemu', image: 'debian-test', options: { accel: 'tcg' } },
        {
          onProgress: (e) => {
            if (e.step === 'process' && /QEMU is running/.test(e.message)) {
              void t.desk
                .listSandboxes()
                .then((list) => (stateWhileBooting = list.find((s) => s.name === name)?.state))
                .finally(() => {
                  t.desk.cancelOperation(name);
                  cancelled();
                });
            }
          },
        },
      );
      await expect(created).rejects.toMatchObject({ code: 'cancelled' });
      await wasCancelled;
      expect(stateWhileBooting).toBe('starting');
      expect(existsSync(vmDir(name))).toBe(false);
      expect(qemuProcessesOf(vmDir(name))).toEqual([]);
      expect((await t.desk.listSandboxes()).map((s) => s.name)).not.toContain(name);
    }, 120_000);

    it('from the CLI: Ctrl-C during `sandbox create` cleans up the same way', async () => {
      const name = uniqueName('vmi');
      const child = spawn(
        process.execPath,
        [BIN, 'sandbox', 'create', name, '--backend', 'qemu', '--image', 'debian-test', '--accel', 'tcg'],
        {
          env: { ...process.env, SANDBOX_DESK_HOME: t.dataDir },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stderr = '';
      let sawBoot = false;
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        if (!sawBoot && /QEMU is running/.test(stderr)) {
          sawBoot = true;
          // Also seen by the running VM's process check below: it existed before the cancel.
          expect(qemuProcessesOf(vmDir(name)).length).toBe(1);
          child.kill('SIGINT');
        }
      });
      const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
      expect(sawBoot).toBe(true);
      expect(code).toBe(125);
      expect(stderr).toMatch(/cancelling/);
      expect(stderr).toMatch(new RegExp(`the create of sandbox ${name} was cancelled`));
      expect(existsSync(vmDir(name))).toBe(false);
      expect(qemuProcessesOf(vmDir(name))).toEqual([]);
      expect((await t.desk.listSandboxes()).map((s) => s.name)).not.toContain(name);
    }, 120_000);
  });
});
