import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig, type Config, type PoolTemplateConfig } from '../platform/config.js';
import { silentLogger } from '../platform/log.js';
import type { ProvisionSpec, SandboxEnvironment, SandboxProvider, SandboxRef } from '../sandbox/provider.js';
import { Store } from '../store/store.js';
import type { PoolEngine, PooledContainer, PoolLimits } from './pool-engine.js';
import { WarmPools, type ClaimRequest } from './warm-pools.js';

/*
 * The pool against a fake engine and provider (the boundary) and a real store: the faults of issue 37
 * that need no Docker — a dead member, a race for the last one, an image rebuilt, a full disk, a service
 * killed mid-claim, the memory budget. test/integration/warm-pools.test.ts does the same with Docker.
 */

const BASE = 'sandbox-desk/base:latest';

class FakeDocker implements PoolEngine {
  images = new Map<string, string>([[BASE, 'sha256:v1']]);
  containers = new Map<string, PooledContainer & { limits?: PoolLimits }>();
  /** A create fails with this (e.g. a full disk) while set. */
  failCreate: Error | null = null;
  /** rename never answers while set: the service "dies" mid-claim. */
  hangRename = false;
  n = 0;

  async imageId(image: string): Promise<string | null> {
    return this.images.get(image) ?? null;
  }
  async inspect(id: string): Promise<PooledContainer | null> {
    return this.containers.get(id) ?? null;
  }
  async listPooled(): Promise<PooledContainer[]> {
    return [...this.containers.values()].filter((c) => 'io.sandbox-desk.pool' in c.labels);
  }
  async setLimits(id: string, limits: PoolLimits): Promise<void> {
    const c = this.containers.get(id);
    if (c) c.limits = limits;
  }
  async rename(id: string, name: string): Promise<void> {
    if (this.hangRename) return new Promise(() => undefined);
    const c = this.containers.get(id);
    if (c) c.name = name;
  }

  provider(): SandboxProvider {
    return providerOf(this);
  }
}

function providerOf(d: FakeDocker): SandboxProvider {
  return {
    name: 'docker',
    isContainer: true,
    defaultCwd: '~',
    supportsStreams: true,
    description: 'fake',
    async provision(spec: ProvisionSpec) {
      if (d.failCreate) throw d.failCreate;
      const id = `c${++d.n}`;
      d.containers.set(id, {
        id,
        name: spec.resourceName,
        running: false,
        imageId: d.images.get(spec.image ?? BASE)!,
        labels: spec.labels,
      });
      return { backendRef: id, user: 'sandbox', image: spec.image };
    },
    async start(ref: SandboxRef) {
      d.containers.get(ref.backendRef!)!.running = true;
    },
    async stop() {},
    async remove(ref: SandboxRef) {
      d.containers.delete(ref.backendRef!);
    },
    async status() {
      return { state: 'running', incarnation: 'i' };
    },
    async createEnvironment(): Promise<SandboxEnvironment> {
      throw new Error('not used');
    },
  } as unknown as SandboxProvider;
}

let dir: string;
let store: Store;
let docker: FakeDocker;
let config: Config['pools'];
const made: WarmPools[] = [];

function pools(): WarmPools {
  const provider = docker.provider();
  const p = new WarmPools({
    store,
    engine: () => docker,
    provider: async () => provider,
    specOf: (rec) => ({
      name: rec.name,
      image: rec.image,
      user: rec.user,
      mounts: rec.mounts,
      env: rec.env,
      options: rec.options,
      labels: { 'io.sandbox-desk.sandbox': rec.name, 'io.sandbox-desk.instance': store.instanceId },
      resourceName: `sdesk-${store.instanceId}-${rec.name}`,
    }),
    environments: {
      connect: async () => ({}) as SandboxEnvironment,
      forget: () => undefined,
    },
    desktop: { start: async () => ({ running: true, reason: null }), adopt: async () => undefined },
    applyNetwork: async () => undefined,
    config: () => config,
    saveTemplates: (templates) => (config = parseConfig({ pools: { ...config, templates } }).pools),
    log: silentLogger,
    changed: () => undefined,
    retryMs: 60_000,
    checkEveryMs: 60_000,
    refillDelayMs: 0,
  });
  made.push(p);
  return p;
}

const ask = (name: string, over: Partial<ClaimRequest['ask']> = {}): ClaimRequest => ({
  ask: { backend: 'docker', start: true, mounts: [], env: {}, options: {}, ...over },
  name,
  declaredDefaultCwd: null,
  typedDefaultCwd: null,
  user: null,
  network: { mode: 'open', allow: [] },
});

const useTemplates = (templates: PoolTemplateConfig[]): void => {
  config = parseConfig({ pools: { templates } }).pools;
};

async function filled(size = 1): Promise<WarmPools> {
  useTemplates([{ size, desktop: false }]);
  const p = pools();
  await p.start();
  await p.settled();
  expect(p.list().pools[0]).toMatchObject({ ready: size, state: 'full' });
  return p;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sdesk-pools-'));
  store = Store.open(dir);
  docker = new FakeDocker();
  config = parseConfig({}).pools;
});

afterEach(async () => {
  for (const p of made.splice(0)) await p.dispose();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('warm pools', () => {
  it("settled() holds the process open while it waits: the refill timers are unref'd, and a script awaiting it must not see its event loop empty (Node exits 13)", async () => {
    const p = await filled(1);
    const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timeouts();
    const waiting = p.settled();
    expect(timeouts()).toBe(before + 1);
    await waiting;
    expect(timeouts()).toBe(before);
  });

  it('off by default: a create goes cold and says why; nothing is made', async () => {
    const p = pools();
    await p.start();
    await p.settled();
    expect(await p.claim(ask('a'))).toEqual({ warm: false, reason: expect.stringMatching(/no warm pool is configured/) });
    expect(docker.containers.size).toBe(0);
  });

  it('fills hidden from the list; a matching create claims one (named, limits lifted, the container renamed); one the pool cannot serve goes cold with the reason', async () => {
    const p = await filled(1);
    expect(store.sandboxes.list()).toEqual([]);
    const idle = [...docker.containers.values()][0]!;
    expect(idle.limits).toEqual({ cpus: 0.5, memoryMiB: 256, cpuShares: 64 });

    const got = await p.claim(ask('mine'));
    expect(got.warm).toBe(true);
    expect(store.sandboxes.list().map((r) => r.name)).toEqual(['mine']);
    expect(store.pools.list().filter((m) => m.state === 'ready')).toEqual([]);
    expect(idle.name).toBe(`sdesk-${store.instanceId}-mine`);
    expect(idle.limits).toEqual({ cpus: null, memoryMiB: null, cpuShares: 1024 });

    expect(await p.claim(ask('m2', { mounts: [{ hostPath: '/x', sandboxPath: '/x' }] }))).toEqual({
      warm: false,
      reason: expect.stringMatching(/host mounts/),
    });
    expect(await p.claim(ask('m3', { image: 'other:1' }))).toEqual({
      warm: false,
      reason: expect.stringMatching(/no pool has this template \(other:1\)/),
    });
    expect(await p.claim(ask('m4', { options: { memory: '512' } }))).toEqual({
      warm: false,
      reason: expect.stringMatching(/memory 512 MiB/),
    });
    // The claim asked for a refill.
    await p.settled();
    expect(p.list().pools[0]).toMatchObject({ ready: 1 });
  });

  it('a pooled sandbox that died or was removed behind the app’s back is never handed out, and is replaced', async () => {
    const p = await filled(2);
    const [first, second] = store.pools.list();
    docker.containers.get(store.sandboxes.get(first!.sandbox)!.backendRef!)!.running = false; // died
    docker.containers.delete(store.sandboxes.get(second!.sandbox)!.backendRef!); // docker rm -f
    const got = await p.claim(ask('late'));
    expect(got).toEqual({ warm: false, reason: expect.stringMatching(/no ready sandbox.*2 dead or of an older image/) });
    await p.settled();
    const now = store.pools.list();
    expect(now.map((m) => m.sandbox)).not.toContain(first!.sandbox);
    expect(now.map((m) => m.sandbox)).not.toContain(second!.sandbox);
    expect(now.filter((m) => m.state === 'ready')).toHaveLength(2);
    expect((await p.claim(ask('next'))).warm).toBe(true);
  });

  it('two claims racing for the last ready sandbox: exactly one gets it, the other goes cold', async () => {
    const p = await filled(1);
    const [a, b] = await Promise.all([p.claim(ask('a')), p.claim(ask('b'))]);
    expect([a.warm, b.warm].sort()).toEqual([false, true]);
    const loser = a.warm ? b : a;
    expect(loser).toMatchObject({ reason: expect.stringMatching(/no ready sandbox/) });
    const winner = a.warm ? 'a' : 'b';
    expect(store.sandboxes.list().map((r) => r.name)).toEqual([winner]);
    // The one container is the winner's, and nobody else's.
    const containers = [...docker.containers.values()].filter((c) => c.name.endsWith(`-${winner}`));
    expect(containers).toHaveLength(1);
  });

  it('the image rebuilt while the pool is full: the old image’s sandboxes are never handed out; the pool drains and refills', async () => {
    const p = await filled(2);
    const old = new Set([...docker.containers.keys()]);
    docker.images.set(BASE, 'sha256:v2');
    expect(await p.claim(ask('x'))).toMatchObject({ warm: false, reason: expect.stringMatching(/older image/) });
    await p.settled();
    const now = [...docker.containers.values()];
    expect(now.filter((c) => old.has(c.id))).toEqual([]);
    expect(now.map((c) => c.imageId)).toEqual(['sha256:v2', 'sha256:v2']);
    const got = await p.claim(ask('y'));
    expect(got.warm).toBe(true);
    expect(docker.containers.get((got as { record: { backendRef: string } }).record.backendRef)!.imageId).toBe('sha256:v2');
  });

  it('the disk full while refilling: the pool stops with a warning, creates go cold, `pool set` restarts it', async () => {
    useTemplates([{ size: 2, desktop: false }]);
    docker.failCreate = new Error('(HTTP code 500) server error - write /var/lib/docker/tmp/x: no space left on device');
    const p = pools();
    await p.start();
    await p.settled();
    expect(p.list().pools[0]).toMatchObject({ state: 'stopped', ready: 0, warning: expect.stringMatching(/disk is full.*no space left/) });
    // Nothing half-made stays: no row, no container.
    expect(store.pools.list()).toEqual([]);
    expect(docker.containers.size).toBe(0);
    expect(await p.claim(ask('cold'))).toEqual({ warm: false, reason: expect.stringMatching(/stopped: the disk is full/) });
    docker.failCreate = null;
    p.set({ size: 2, desktop: false });
    await p.settled();
    expect(p.list().pools[0]).toMatchObject({ state: 'full', ready: 2, warning: null });
  });

  it('the service killed mid-claim: the next service finds the sandbox the user’s and named — never both, never lost', async () => {
    const first = await filled(1);
    docker.hangRename = true;
    // The claim's transaction commits, then the engine step never finishes: the process "dies" here.
    void first.claim(ask('mine'));
    await new Promise((r) => setTimeout(r, 20));
    expect(store.sandboxes.list().map((r) => r.name)).toEqual(['mine']);
    expect(store.pools.list().filter((m) => m.state === 'ready')).toEqual([]);
    const container = [...docker.containers.values()][0]!;
    expect(container.name).toMatch(/-pool-/);

    docker.hangRename = false;
    useTemplates([]); // the next service has no pools: nothing refills, only the reconcile runs
    const next = pools();
    await next.start();
    await next.settled();
    expect(container.name).toBe(`sdesk-${store.instanceId}-mine`);
    expect(container.limits).toMatchObject({ cpuShares: 1024 });
    expect(store.sandboxes.list().map((r) => r.name)).toEqual(['mine']);
    expect(store.pools.list()).toEqual([]);
    expect(docker.containers.size).toBe(1);
  });

  it('a claim whose name is taken meanwhile rolls back: the sandbox stays the pool’s', async () => {
    const p = await filled(1);
    const member = store.pools.list()[0]!;
    store.sandboxes.insert({ ...store.sandboxes.get(member.sandbox)!, name: 'taken', backendRef: 'other' });
    expect(() =>
      store.pools.claim(member.sandbox, {
        name: 'taken',
        declaredDefaultCwd: null,
        typedDefaultCwd: null,
        user: null,
        options: {},
        createdAt: 'now',
      }),
    ).toThrow(/UNIQUE|constraint/);
    expect(store.pools.get(member.sandbox)).toMatchObject({ state: 'ready' });
    expect(p.list().pools[0]).toMatchObject({ ready: 1 });
  });

  it('a fill interrupted by the end of a service, and a pooled container no row knows, are removed at the next start', async () => {
    useTemplates([]);
    store.sandboxes.insert({
      name: 'pool-x-1',
      backend: 'docker',
      image: BASE,
      user: null,
      declaredDefaultCwd: null,
      backendRef: 'c-half',
      mounts: [],
      env: {},
      options: {},
      createdAt: 'now',
      home: null,
      homeIncarnation: null,
      lastObservedCwd: null,
      lastObservedAt: null,
    });
    store.pools.add('pool-x-1', 'x', 'now');
    docker.containers.set('c-half', {
      id: 'c-half',
      name: 'sdesk-pool-x-1',
      running: true,
      imageId: 'sha256:v1',
      labels: { 'io.sandbox-desk.pool': 'x' },
    });
    docker.containers.set('c-orphan', {
      id: 'c-orphan',
      name: 'sdesk-pool-x-2',
      running: true,
      imageId: 'sha256:v1',
      labels: { 'io.sandbox-desk.pool': 'x' },
    });
    const p = pools();
    await p.start();
    expect(docker.containers.size).toBe(0);
    expect(store.pools.list()).toEqual([]);
  });

  it('pools bigger than the memory budget are refused, at `pool set` and at config load', () => {
    useTemplates([{ size: 1, desktop: true }]);
    const p = pools();
    expect(() => p.set({ size: 2, desktop: false })).not.toThrow();
    expect(() => p.set({ size: 2, desktop: true })).toThrow(
      /the pools would hold 2560 MiB \(2 × 256 MiB \+ 2 × 1024 MiB\), more than pools.memoryBudgetMiB 2048 MiB: make a pool smaller, or raise the budget/,
    );
    // Refused means not written.
    expect(config.templates.find((t) => t.desktop)).toMatchObject({ size: 1 });
    expect(() => parseConfig({ pools: { memoryBudgetMiB: 512, templates: [{ size: 3 }] } })).toThrow(
      /pools\.templates: the pools would hold 768 MiB \(3 × 256 MiB\), more than pools.memoryBudgetMiB 512 MiB/,
    );
  });
});
