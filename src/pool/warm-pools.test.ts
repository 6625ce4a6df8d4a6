import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig, type Config, type PoolTemplateConfig } from '../platform/config.js';
import { silentLogger } from '../platform/log.js';
import type { ProvisionSpec, SandboxEnvironment, SandboxProvider, SandboxRef } from '../sandbox/provider.js';
import { Store } from '../store/store.js';
import type { PoolEngine, PooledContainer, PoolLimits } from './pool-engine.js';
import { WarmPools, type AheadStream, type ClaimRequest, type WarmPoolsDeps } from './warm-pools.js';

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
  /** unpause never answers while set: the service "dies" mid-claim of a paused desktop. */
  hangUnpause = false;
  n = 0;
  /** The engine steps in the order they ran (container id first). */
  steps: string[] = [];

  async imageId(image: string): Promise<string | null> {
    return this.images.get(image) ?? null;
  }
  async inspect(id: string): Promise<PooledContainer | null> {
    return this.containers.get(id) ?? null;
  }
  async listPooled(): Promise<PooledContainer[]> {
    return [...this.containers.values()].filter((c) => 'io.sandbox-desk.pool' in c.labels);
  }
  /** Every limit set, in order: the CPU cap and weight. */
  limitsSet: Array<{ cpus: number | null; cpuShares: number }> = [];
  async setLimits(id: string, limits: PoolLimits): Promise<void> {
    const c = this.containers.get(id);
    this.steps.push(`${id} limits ${limits.cpuShares}`);
    this.limitsSet.push({ cpus: limits.cpus, cpuShares: limits.cpuShares });
    if (c) c.limits = limits;
  }
  /** The next this-many pauses fail as the cgroup freezer does under load. */
  failPauses = 0;
  async pause(id: string): Promise<void> {
    if (this.failPauses > 0) {
      this.failPauses--;
      this.steps.push(`${id} pause refused`);
      throw new Error('(HTTP code 500) server error - Cannot pause container: OCI runtime pause failed: unable to freeze: unknown');
    }
    this.steps.push(`${id} pause`);
    this.containers.get(id)!.paused = true;
  }
  async unpause(id: string): Promise<void> {
    if (this.hangUnpause) return new Promise(() => undefined);
    this.steps.push(`${id} unpause`);
    this.containers.get(id)!.paused = false;
  }
  async run(id: string, argv: string[], opts: { user: string }): Promise<{ code: number; output: string }> {
    const c = this.containers.get(id)!;
    // A frozen container runs nothing: the real engine would hang here.
    if (c.paused) throw new Error('run in a paused container');
    this.steps.push(`${id} run as ${opts.user}: ${argv.slice(-2).join(' → ')}`);
    return { code: 0, output: '' };
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
        paused: false,
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
/** The pre-opened shells the fake hands out: where each went. */
let shells: Array<{ openedFor: string; handedTo: string | null; closed: boolean }>;
/** false: a claimed sandbox's session cannot take the shell (another user, other proxy variables). */
let shellFits: boolean;
/** The desktop screen streams opened ahead (one per desktop member's fill), and what became of them. */
let aheads: Array<{ openedFor: string; stream: AheadStream; killed: boolean }>;
/** The desktop service's answers to a claim's hand-over: whom it was told about, with which stream. */
let handovers: Array<{ member: string; name: string; ahead: AheadStream | undefined }>;
/** Whether the desktop service knows the member's account (it filled the pool in this process). */
let desktopKnown: boolean;

const envOf = (name: string): SandboxEnvironment => ({ name, incarnation: 'i', getTempDir: () => '/tmp' }) as unknown as SandboxEnvironment;

/** How long the fake desktop takes to start (a starved member's start-up). */
let desktopStartMs: number;

function pools(over: Partial<WarmPoolsDeps> = {}): WarmPools {
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
      connect: async (rec) => envOf(rec.name),
      forget: () => undefined,
    },
    shells: {
      open: async (env) => {
        const s = { openedFor: (env as unknown as { name: string }).name, handedTo: null as string | null, closed: false };
        shells.push(s);
        return {
          handTo: (name) => {
            if (!shellFits) return false;
            s.handedTo = name;
            return true;
          },
          close: () => (s.closed = true),
        };
      },
    },
    desktop: {
      start: async () => {
        await new Promise((r) => setTimeout(r, desktopStartMs));
        return { running: true, reason: null };
      },
      adopt: async () => undefined,
      handedOver: (member, name, _env, ahead) => {
        handovers.push({ member, name, ahead });
        return desktopKnown;
      },
      openAhead: async (member) => {
        docker.steps.push(`stream ahead ${member}`);
        const events = new EventEmitter();
        const stream = Object.assign(events, {
          kill: () => {
            a.killed = true;
            events.emit('close');
            return true;
          },
        }) as unknown as AheadStream;
        const a = { openedFor: member, stream, killed: false };
        aheads.push(a);
        return stream;
      },
    },
    applyNetwork: async () => undefined,
    config: () => config,
    saveTemplates: (templates) => (config = parseConfig({ pools: { ...config, templates } }).pools),
    log: silentLogger,
    changed: () => undefined,
    retryMs: 60_000,
    checkEveryMs: 60_000,
    refillDelayMs: 0,
    ...over,
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
  shells = [];
  shellFits = true;
  aheads = [];
  handovers = [];
  desktopKnown = true;
  desktopStartMs = 0;
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
    expect(idle.limits).toEqual({ cpus: 0.25, memoryMiB: 256, cpuShares: 2 });

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
      paused: false,
      imageId: 'sha256:v1',
      labels: { 'io.sandbox-desk.pool': 'x' },
    });
    docker.containers.set('c-orphan', {
      id: 'c-orphan',
      name: 'sdesk-pool-x-2',
      running: true,
      paused: false,
      imageId: 'sha256:v1',
      labels: { 'io.sandbox-desk.pool': 'x' },
    });
    const p = pools();
    await p.start();
    expect(docker.containers.size).toBe(0);
    expect(store.pools.list()).toEqual([]);
  });

  it('the default session’s shell is opened at the fill and handed to the claimer’s session; one it cannot take, or of a removed member, is closed', async () => {
    const p = await filled(2);
    // (Two members made in the same millisecond have no order: none is assumed.)
    const members = store.pools.list().map((m) => m.sandbox);
    expect(shells.map((s) => s.openedFor).sort()).toEqual([...members].sort());
    expect((await p.claim(ask('mine'))).warm).toBe(true);
    const handed = shells.find((s) => s.handedTo === 'mine')!;
    expect(handed).toMatchObject({ closed: false, openedFor: expect.stringMatching(/^pool-/) });
    // Another user asked: the session does not take the shell, and it does not stay open in the user's sandbox.
    shellFits = false;
    expect((await p.claim(ask('other'))).warm).toBe(true);
    const refused = shells.find((s) => members.includes(s.openedFor) && s !== handed)!;
    expect(refused).toMatchObject({ handedTo: null, closed: true });
    // A member removed (drained) takes its shell with it.
    await p.settled();
    const refilled = shells.slice(2);
    expect(refilled).toHaveLength(2);
    await p.drain();
    expect(refilled.map((s) => s.closed)).toEqual([true, true]);
  });

  it('a member claimed by another process on this data dir: its shell here is closed at the next look', async () => {
    const p = await filled(1);
    const member = store.pools.list()[0]!.sandbox;
    // What another process's claim commits (its transaction): the row is the user's, no longer a member.
    store.pools.claim(member, {
      name: 'elsewhere',
      declaredDefaultCwd: null,
      typedDefaultCwd: null,
      user: null,
      options: {},
      createdAt: 'now',
    });
    p.kick();
    await p.settled();
    expect(shells[0]).toMatchObject({ openedFor: member, handedTo: null, closed: true });
  });

  it('a desktop member waits paused; a claim lifts its caps and thaws it before its folder moves, and hands it out', async () => {
    useTemplates([{ size: 1, desktop: true }]);
    const p = pools();
    await p.start();
    await p.settled();
    const member = store.pools.list()[0]!.sandbox;
    const c = [...docker.containers.values()][0]!;
    expect(c).toMatchObject({ paused: true, running: true, limits: { cpuShares: 2 } });
    // The shell and the screen stream were opened before the freeze.
    expect(docker.steps).toEqual([`${c.id} limits 2`, `stream ahead ${member}`, `${c.id} pause`]);
    docker.steps = [];
    const got = await p.claim(ask('desk', { options: { desktop: 'true' } }));
    expect(got.warm).toBe(true);
    expect(c).toMatchObject({ paused: false, name: `sdesk-${store.instanceId}-desk`, limits: { cpuShares: 1024 } });
    expect(docker.steps.slice(-1)).toEqual([`${c.id} run as root: /tmp/sandbox-desk-desktop-${member} → /tmp/sandbox-desk-desktop-desk`]);
    expect(docker.steps.slice(0, 2).sort()).toEqual([`${c.id} limits 1024`, `${c.id} unpause`]);
    expect(shells[0]).toMatchObject({ handedTo: 'desk' });
  });

  it("a desktop member's screen stream, opened at the fill, is handed over with the desktop at the claim (before the create answers)", async () => {
    useTemplates([{ size: 1, desktop: true }]);
    const p = pools();
    await p.start();
    await p.settled();
    const member = store.pools.list()[0]!.sandbox;
    expect(aheads).toMatchObject([{ openedFor: member, killed: false }]);
    expect((await p.claim(ask('desk', { options: { desktop: 'true' } }))).warm).toBe(true);
    expect(handovers).toEqual([{ member, name: 'desk', ahead: aheads[0]!.stream }]);
    expect(aheads[0]!.killed).toBe(false);
  });

  it("a claim in another process (the member is no longer one): this process's stream to it is closed by the next sweep", async () => {
    useTemplates([{ size: 1, desktop: true }]);
    const p = pools();
    await p.start();
    await p.settled();
    const member = store.pools.list()[0]!.sandbox;
    const other = pools();
    expect((await other.claim(ask('desk', { options: { desktop: 'true' } }))).warm).toBe(true);
    expect(store.pools.isMember(member)).toBe(false);
    p.kick();
    await p.settled();
    expect(aheads[0]).toMatchObject({ openedFor: member, killed: true });
  });

  it('a fill starved at the least CPU weight (its desktop start outlasting the aging time) is raised so it finishes, and waits at the least weight again', async () => {
    useTemplates([{ size: 1, desktop: true }]);
    desktopStartMs = 150;
    const p = pools({ fillAgingMs: 30 });
    await p.start();
    await p.settled();
    const c = [...docker.containers.values()][0]!;
    const member = store.pools.list()[0]!.sandbox;
    expect(docker.steps).toEqual([`${c.id} limits 2`, `${c.id} limits 256`, `${c.id} limits 2`, `stream ahead ${member}`, `${c.id} pause`]);
    // Its cap is raised with its weight (a quarter of a CPU → half), and put back with it.
    expect(docker.limitsSet).toEqual([
      { cpus: 0.25, cpuShares: 2 },
      { cpus: 0.5, cpuShares: 256 },
      { cpus: 0.25, cpuShares: 2 },
    ]);
    expect(c).toMatchObject({ paused: true, limits: { cpuShares: 2 } });
    expect(p.list().pools[0]).toMatchObject({ ready: 1, state: 'full' });
  });

  it("a desktop fill runs at a quarter of a CPU (its rate is what costs a viewed desktop frames); a template's own lower cap is kept, aged too", async () => {
    useTemplates([{ size: 1, desktop: true, cpus: 0.2 }]);
    desktopStartMs = 150;
    const p = pools({ fillAgingMs: 30 });
    await p.start();
    await p.settled();
    expect(docker.limitsSet).toEqual([
      { cpus: 0.2, cpuShares: 2 },
      { cpus: 0.2, cpuShares: 256 },
      { cpus: 0.2, cpuShares: 2 },
    ]);
    useTemplates([{ size: 1, desktop: true, cpus: 2 }]);
    docker.limitsSet = [];
    desktopStartMs = 0;
    p.kick();
    await p.settled();
    expect(docker.limitsSet).toEqual([{ cpus: 0.25, cpuShares: 2 }]);
  });

  it('a fill that finishes within the aging time keeps the least weight throughout (no engine call beyond the idle caps)', async () => {
    useTemplates([{ size: 1, desktop: true }]);
    desktopStartMs = 20;
    const p = pools({ fillAgingMs: 1000 });
    await p.start();
    await p.settled();
    const c = [...docker.containers.values()][0]!;
    expect(docker.steps).toEqual([`${c.id} limits 2`, `stream ahead ${store.pools.list()[0]!.sandbox}`, `${c.id} pause`]);
  });

  it('the freezer refusing to pause a ready desktop member (under load): tried again; refused every time, the member waits running and is still handed out', async () => {
    useTemplates([{ size: 1, desktop: true }]);
    docker.failPauses = 1;
    const p = pools({ pauseRetryMs: 5 });
    await p.start();
    await p.settled();
    const c = [...docker.containers.values()][0]!;
    expect(docker.steps).toEqual([
      `${c.id} limits 2`,
      `stream ahead ${store.pools.list()[0]!.sandbox}`,
      `${c.id} pause refused`,
      `${c.id} pause`,
    ]);
    expect(c.paused).toBe(true);

    await p.drain();
    useTemplates([{ size: 1, desktop: true }]);
    docker.steps = [];
    docker.failPauses = 99;
    p.set({ size: 1, desktop: true });
    await p.settled();
    const d = [...docker.containers.values()][0]!;
    expect(docker.steps).toEqual([
      `${d.id} limits 2`,
      `stream ahead ${store.pools.list()[0]!.sandbox}`,
      ...Array(3).fill(`${d.id} pause refused`),
    ]);
    expect(d).toMatchObject({ paused: false, running: true, limits: { cpuShares: 2 } });
    expect(p.list().pools[0]).toMatchObject({ ready: 1, state: 'full' });
    docker.failPauses = 0;
    const got = await p.claim(ask('desk', { options: { desktop: 'true' } }));
    expect(got.warm).toBe(true);
    expect(docker.steps).not.toContain(`${d.id} unpause`);
  });

  it('a desktop member that died while paused is never handed out, and is replaced', async () => {
    useTemplates([{ size: 1, desktop: true }]);
    const p = pools();
    await p.start();
    await p.settled();
    const [dead] = store.pools.list();
    const c = docker.containers.get(store.sandboxes.get(dead!.sandbox)!.backendRef!)!;
    Object.assign(c, { running: false, paused: false }); // killed (docker kill of a paused container)
    expect(await p.claim(ask('desk', { options: { desktop: 'true' } }))).toEqual({
      warm: false,
      reason: expect.stringMatching(/1 dead or of an older image/),
    });
    await p.settled();
    expect(store.pools.list().map((m) => m.sandbox)).not.toContain(dead!.sandbox);
    expect(docker.containers.has(c.id)).toBe(false);
    expect((await p.claim(ask('desk2', { options: { desktop: 'true' } }))).warm).toBe(true);
  });

  it('the service killed mid-claim of a paused desktop: the next service thaws it, names it and moves its folder', async () => {
    useTemplates([{ size: 1, desktop: true }]);
    const first = pools();
    await first.start();
    await first.settled();
    docker.hangUnpause = true;
    void first.claim(ask('desk', { options: { desktop: 'true' } }));
    await new Promise((r) => setTimeout(r, 20));
    const c = [...docker.containers.values()][0]!;
    expect(c.paused).toBe(true);
    docker.hangUnpause = false;
    useTemplates([]);
    const next = pools();
    await next.start();
    await next.settled();
    expect(c).toMatchObject({ paused: false, name: `sdesk-${store.instanceId}-desk`, limits: { cpuShares: 1024 } });
    expect(docker.steps.at(-1)).toMatch(/run as root: .*sandbox-desk-desktop-desk$/);
    expect(store.sandboxes.list().map((r) => r.name)).toEqual(['desk']);
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
