import { describe, expect, it } from 'vitest';
import { CoreEventBus, type CoreEvent } from '../shared/core-events.js';
import { PluginStatusWatch } from './plugin-status-watch.js';

describe('PluginStatusWatch', () => {
  it('publishes a plugin whose status changed, once, and only while someone listens', async () => {
    const bus = new CoreEventBus();
    const seen: CoreEvent[] = [];
    bus.onEvent((e) => seen.push(e));
    let statuses = [{ name: 'podman', status: 'loaded', error: null as string | null }];
    let reads = 0;
    const w = new PluginStatusWatch({ bus, statuses: async () => (reads++, statuses), checkMs: 3 });
    await new Promise((r) => setTimeout(r, 15));
    expect(reads).toBe(0);
    const listening = bus.listen();
    await new Promise((r) => setTimeout(r, 15));
    statuses = [{ name: 'podman', status: 'crashed', error: 'its host exited 3 times' }];
    await new Promise((r) => setTimeout(r, 20));
    expect(seen).toEqual([
      expect.objectContaining({ topic: 'plugin', plugin: 'podman', status: 'crashed', error: 'its host exited 3 times' }),
    ]);
    listening.dispose();
    const after = reads;
    await new Promise((r) => setTimeout(r, 15));
    expect(reads).toBe(after);
    w.dispose();
  });
});
