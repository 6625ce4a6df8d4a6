import { describe, expect, it } from 'vitest';
import type { ExecWarning } from '../shared/exec-result.js';
import { SandboxOperations } from './sandbox-operations.js';

describe('SandboxOperations', () => {
  it('records each step for pollers, forwards it to the listener, and marks the end', async () => {
    const ops = new SandboxOperations(() => undefined);
    const heard: string[] = [];
    const seenWhileRunning = await ops.run(
      'vm',
      'start',
      (e) => heard.push(e.message),
      async ({ progress }) => {
        progress!({ step: 'process', message: 'starting QEMU' });
        progress!({ step: 'ssh', message: 'SSH answers' });
        return { ...ops.get('vm')! };
      },
    );
    expect(seenWhileRunning).toMatchObject({ kind: 'start', done: false });
    expect(heard).toEqual(['starting QEMU', 'SSH answers']);
    const op = ops.get('vm')!;
    expect(op).toMatchObject({ kind: 'start', done: true, error: null });
    expect(op.events.map((e) => [e.step, e.level])).toEqual([
      ['process', 'info'],
      ['ssh', 'info'],
    ]);
    expect(ops.get('other')).toBeNull();
  });

  it('keeps the error of a failed operation and rethrows it', async () => {
    const ops = new SandboxOperations(() => undefined);
    await expect(ops.run('vm', 'start', undefined, async () => Promise.reject(new Error('not ready within 8 s')))).rejects.toThrow(
      'not ready within 8 s',
    );
    expect(ops.get('vm')).toMatchObject({ done: true, error: 'not ready within 8 s' });
  });

  it('hands warnings on as backend_warning, and survives a listener that throws', async () => {
    const warnings: Array<[string, ExecWarning]> = [];
    const ops = new SandboxOperations((name, w) => warnings.push([name, w]));
    await ops.run(
      'vm',
      'start',
      () => {
        throw new Error('stream closed');
      },
      async ({ progress }) => progress!({ step: 'accel', message: 'KVM does not work here; using TCG', level: 'warning' }),
    );
    expect(warnings).toEqual([['vm', { code: 'backend_warning', message: 'KVM does not work here; using TCG' }]]);
    expect(ops.get('vm')!.events[0]).toMatchObject({ level: 'warning' });
  });

  it('keeps the last 200 events of a chatty backend', async () => {
    const ops = new SandboxOperations(() => undefined);
    await ops.run('vm', 'create', undefined, async ({ progress }) => {
      for (let i = 0; i < 250; i++) progress!({ step: 'build', message: `step ${i}` });
    });
    const events = ops.get('vm')!.events;
    expect(events).toHaveLength(200);
    expect(events[0]!.message).toBe('step 50');
    expect(events.at(-1)!.message).toBe('step 249');
  });
});
