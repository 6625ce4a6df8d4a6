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

  it('cancel aborts the signal the provider was given and ends the operation with the cancelled error', async () => {
    const ops = new SandboxOperations(() => undefined);
    let seen: AbortSignal | undefined;
    const running = ops.run('vm', 'create', undefined, ({ signal, progress }) => {
      seen = signal;
      progress!({ step: 'disk', message: 'overlay' });
      // A provider's own words on the way out ("cancelled while waiting for SSH") are replaced by one error.
      return new Promise((_, reject) => signal!.addEventListener('abort', () => reject(new Error('boot_failed: cancelled while waiting'))));
    });
    expect(ops.cancel('vm')).toMatchObject({ kind: 'create', cancelled: true, done: false });
    expect(seen?.aborted).toBe(true);
    await expect(running).rejects.toMatchObject({ code: 'cancelled', message: 'the create of sandbox vm was cancelled' });
    expect(ops.get('vm')).toMatchObject({ done: true, cancelled: true, error: 'the create of sandbox vm was cancelled' });
    expect(ops.running('vm')).toBeNull();
  });

  it('a caller signal (the CLI Ctrl-C) cancels too; work that ignored it still ends cancelled', async () => {
    const ops = new SandboxOperations(() => undefined);
    const caller = new AbortController();
    const running = ops.run(
      'c',
      'start',
      undefined,
      async () => {
        caller.abort();
        return 'finished anyway';
      },
      caller.signal,
    );
    await expect(running).rejects.toMatchObject({ code: 'cancelled' });
  });

  it('refuses to cancel what is not running, and a stop', async () => {
    const ops = new SandboxOperations(() => undefined);
    expect(() => ops.cancel('none')).toThrow(/nothing to cancel/);
    let finish: () => void = () => undefined;
    const stopping = ops.run('vm', 'stop', undefined, () => new Promise<void>((r) => (finish = r)));
    expect(() => ops.cancel('vm')).toThrow(/a stop cannot be cancelled/);
    finish();
    await stopping;
    expect(() => ops.cancel('vm')).toThrow(/nothing to cancel/);
  });
});
