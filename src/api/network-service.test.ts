import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CoreEventBus, type CoreEvent } from '../shared/core-events.js';
import { silentLogger } from '../platform/log.js';
import type { NetworkCapability, NetworkPlan, SandboxProvider } from '../sandbox/provider.js';
import { Store } from '../store/store.js';
import { newSandboxRecord } from './sandbox-info.js';
import { NetworkService } from './network-service.js';
import { SandboxDeskError } from '../shared/errors.js';

/** A backend that records what it was asked to enforce (the boundary is faked; the store and files are real). */
function provider(name: string, cap?: Partial<NetworkCapability>, applied: NetworkPlan[] = []): SandboxProvider {
  return {
    name,
    ...(cap
      ? {
          networkPolicy: {
            modes: ['open', 'offline', 'allow'],
            liveModeSwitch: true,
            apply: async (_r: unknown, plan: NetworkPlan) => void applied.push(plan),
            release: async () => undefined,
            ...cap,
          },
        }
      : {}),
  } as unknown as SandboxProvider;
}

describe('NetworkService', () => {
  let dir: string;
  let store: Store;
  const events: CoreEvent[] = [];
  let svc: NetworkService;
  let backend: SandboxProvider;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'netsvc-'));
    store = Store.open(dir);
    const bus = new CoreEventBus();
    bus.onEvent((e) => events.push(e));
    store.sandboxes.insert(newSandboxRecord({ name: 'box', backend: 'fake', mounts: [], env: {}, options: {}, declaredDefaultCwd: null }));
    svc = new NetworkService({
      store,
      events: bus,
      log: silentLogger,
      providerOf: async () => backend,
      record: (n) => store.sandboxes.get(n)!,
      resourceName: (r) => `res-${r.name}`,
      labels: () => ({}),
      reconnect: () => undefined,
    });
  });
  afterEach(() => {
    svc.dispose();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a mode the backend cannot enforce is refused with the reason; open always works', () => {
    expect(() => svc.initial(provider('plain'), 'offline', [])).toThrow(/the plain backend cannot enforce network mode offline/);
    expect(svc.initial(provider('plain'), undefined, [])).toEqual({ mode: 'open', allow: [] });
    expect(svc.initial(provider('x', { modes: ['open', 'offline'] }), 'offline', [])).toEqual({ mode: 'offline', allow: [] });
    expect(() => svc.initial(provider('x', { modes: ['open', 'offline'] }), 'allow', ['a.com'])).toThrow(
      expect.objectContaining({ code: 'unsupported', hint: 'it enforces open, offline' }),
    );
    // Entries alone mean allow; they are normalized and de-duplicated.
    expect(svc.initial(provider('x', {}), undefined, ['A.com', 'a.com.'])).toEqual({ mode: 'allow', allow: ['a.com'] });
  });

  it('remembers, mirrors to policies.json, changes live (publishing an event), and a fork inherits it', async () => {
    const applied: NetworkPlan[] = [];
    backend = provider('fake', {}, applied);
    svc.remember('box', { mode: 'allow', allow: ['a.com'] });
    expect(JSON.parse(readFileSync(join(dir, 'network', 'policies.json'), 'utf8'))).toEqual({ box: { mode: 'allow', allow: ['a.com'] } });
    const p = await svc.change('box', { deny: ['a.com'], mode: 'offline' }, true);
    expect(p).toEqual({ mode: 'offline', allow: [] });
    expect(applied.at(-1)).toMatchObject({ policy: p, resourceName: 'res-box' });
    expect(events.at(-1)).toMatchObject({ topic: 'network', kind: 'policy', sandbox: 'box', policy: p });
    expect(svc.inherit('box', 'box-fork')).toEqual(p);
    expect(svc.policy('box-fork')).toEqual(p);
  });

  it('a backend that switches modes only while stopped refuses a live switch, but takes the allow list', async () => {
    backend = provider('vm', { liveModeSwitch: false });
    svc.remember('box', { mode: 'allow', allow: [] });
    await expect(svc.change('box', { mode: 'offline' }, true)).rejects.toThrow(SandboxDeskError);
    await expect(svc.change('box', { mode: 'offline' }, true)).rejects.toMatchObject({ code: 'unsupported' });
    expect(svc.policy('box').mode).toBe('allow');
    expect((await svc.change('box', { mode: 'offline' }, false)).mode).toBe('offline');
  });
});
