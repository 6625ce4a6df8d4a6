import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CoreEvent } from '../shared/core-events.js';
import type { BackendStatus } from '../sandbox/provider.js';
import { LocalProvider } from '../sandbox/local/local-provider.js';
import { ProviderRegistry } from '../sandbox/registry.js';
import { SandboxDesk } from './sandbox-desk.js';

/** A backend whose engine hangs (an unreachable host): status answers only when the test says. */
class HangingProvider extends LocalProvider {
  override readonly name = 'hanging' as 'local';
  release: () => void = () => undefined;
  override status(): Promise<BackendStatus> {
    return new Promise((resolve) => (this.release = () => resolve({ state: 'stopped', incarnation: null } as unknown as BackendStatus)));
  }
}

let dir: string;
let desk: SandboxDesk;
let hanging: HangingProvider;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sdesk-deadline-'));
  const registry = new ProviderRegistry();
  registry.registerBuiltin(new LocalProvider());
  hanging = new HangingProvider();
  registry.register(hanging);
  desk = new SandboxDesk({ dataDir: dir, registry, plugins: false });
  desk.listDeadlineMs = 50;
  await desk.createSandbox({ name: 'fast', backend: 'local', defaultCwd: '/tmp' });
  // Straight into the store: creating it would ask the hanging backend.
  desk.store.sandboxes.insert({ ...desk.store.sandboxes.get('fast')!, name: 'slow', backend: 'hanging' });
});
afterEach(async () => {
  hanging.release();
  await desk.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('listSandboxes with a backend that hangs', () => {
  it('lists the others at once, the hanging one unavailable; its late answer becomes an event', async () => {
    const seen: CoreEvent[] = [];
    desk.events.onEvent((e) => seen.push(e));
    const list = await desk.listSandboxes();
    expect(list.find((s) => s.name === 'fast')!.state).toBe('running');
    const slow = list.find((s) => s.name === 'slow')!;
    expect(slow.state).toBe('unavailable');
    expect(slow.stateDetail).toMatch(/did not answer within 50 ms/);
    hanging.release();
    for (let i = 0; i < 100 && !seen.some((e) => e.topic === 'sandbox' && e.sandbox === 'slow'); i++)
      await new Promise((r) => setTimeout(r, 5));
    expect(seen.find((e) => e.topic === 'sandbox' && e.sandbox === 'slow')).toMatchObject({ reason: 'backend answered late' });
  });
});
