import { describe, expect, it } from 'vitest';
import { QemuExitWatch } from './qemu-exit-watch.js';

describe('QemuExitWatch', () => {
  it('reports a watched VM once when its process is gone or its pid was reused', async () => {
    const starts = new Map<number, string | null>([
      [100, 's100'],
      [200, 's200'],
    ]);
    const w = new QemuExitWatch((pid) => starts.get(pid) ?? null, 2);
    w.add({ sandbox: 'vm-a', backendRef: 'a', pid: 100, pidStart: 's100' });
    w.add({ sandbox: 'vm-b', backendRef: 'b', pid: 200, pidStart: 's200' });
    const seen: string[] = [];
    const sub = w.watch({ changed: (c) => seen.push(`${c.sandbox}:${c.action}`), engine: () => undefined });
    await new Promise((r) => setTimeout(r, 15));
    expect(seen).toEqual([]);
    starts.set(100, null); // killed
    starts.set(200, 'other'); // the pid now belongs to another process
    await new Promise((r) => setTimeout(r, 15));
    expect(seen.sort()).toEqual(['vm-a:die', 'vm-b:die']);
    await new Promise((r) => setTimeout(r, 15));
    expect(seen).toHaveLength(2);
    sub.dispose();
  });
});
