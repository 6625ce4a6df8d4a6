import { describe, expect, it } from 'vitest';
import { rejectsWith } from '../../test/expect-error.js';
import { CoreEventBus, type CoreEvent } from '../shared/core-events.js';
import type { ResourceSample } from '../sandbox/observability.js';
import type { SandboxProvider, SandboxRef } from '../sandbox/provider.js';
import { cpuPercent, StatsService } from './stats-service.js';

const ref = (name: string): SandboxRef => ({ name, backendRef: name, image: null, user: null, mounts: [], env: {}, options: {} });

/** A backend whose sandbox burns half a core: cpuNs grows by half the wall time. */
function halfCore(): SandboxProvider {
  const t0 = Date.now();
  return {
    name: 'fake',
    resources: {
      sample: async (r: SandboxRef): Promise<ResourceSample | null> => {
        if (r.name === 'off') return null;
        const now = Date.now();
        return { cpuNs: (now - t0) * 0.5e6, atMs: now, memoryBytes: 1000, memoryLimitBytes: 4000 };
      },
    },
  } as unknown as SandboxProvider;
}

function stats(provider: SandboxProvider, events = new CoreEventBus(), names = ['busy']) {
  return new StatsService(
    { target: async (n) => ({ ref: ref(n), provider }), names: () => names, engineInfo: async () => ({ docker: null }), events },
    20,
  );
}

describe('cpuPercent', () => {
  it('is percent of one core between two readings, null when they do not belong together', () => {
    const a = { cpuNs: 0, atMs: 1000, memoryBytes: 0, memoryLimitBytes: null };
    expect(cpuPercent(a, { ...a, cpuNs: 2e9, atMs: 2000 })).toBe(200);
    expect(cpuPercent(a, { ...a, cpuNs: 1e9, atMs: 1000 })).toBeNull();
    expect(cpuPercent({ ...a, cpuNs: 5 }, { ...a, cpuNs: 1, atMs: 2000 })).toBeNull();
  });
});

describe('StatsService', () => {
  it('turns counters into a percentage (a second reading when there is no earlier one)', async () => {
    const s = await stats(halfCore()).sample('busy');
    expect(s.cpuPercent).toBeGreaterThan(40);
    expect(s.cpuPercent).toBeLessThan(60);
    expect(s.memoryBytes).toBe(1000);
    expect(s.memoryLimitBytes).toBe(4000);
  });

  it('says a stopped sandbox has nothing to measure, and a backend without counters is unsupported', async () => {
    await rejectsWith(stats(halfCore()).sample('off'), 'sandbox_not_running');
    const e = await rejectsWith(stats({ name: 'bare' } as unknown as SandboxProvider).sample('x'), 'unsupported');
    expect(e.message).toMatch(/bare backend does not measure/);
  });

  it('publishes stats events only while watched', async () => {
    const bus = new CoreEventBus();
    const seen: CoreEvent[] = [];
    bus.onEvent((e) => seen.push(e));
    const svc = stats(halfCore(), bus, ['busy', 'off']);
    await new Promise((r) => setTimeout(r, 100));
    expect(seen).toEqual([]);
    const w = svc.watch();
    while (seen.length < 2) await new Promise((r) => setTimeout(r, 10));
    w.dispose();
    expect(svc.watching).toBe(false);
    // A round under way when the last watcher left publishes nothing more.
    await new Promise((r) => setTimeout(r, 1500));
    const after = seen.length;
    await new Promise((r) => setTimeout(r, 200));
    expect(seen.length).toBe(after);
    expect(seen.every((e) => e.topic === 'stats' && e.sandbox === 'busy')).toBe(true);
    svc.dispose();
  });
});
