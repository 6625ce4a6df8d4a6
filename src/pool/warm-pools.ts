import { randomBytes } from 'node:crypto';
import { SandboxDeskError } from '../shared/errors.js';
import type { NetworkPolicy } from '../shared/network-policy.js';
import { idleMemoryMiB, poolBudgetProblem, type Config, type PoolTemplateConfig } from '../platform/config.js';
import type { Logger } from '../platform/log.js';
import type { ProvisionSpec, SandboxEnvironment, SandboxProvider } from '../sandbox/provider.js';
import type { SandboxRecord } from '../store/sandbox-store.js';
import type { Store } from '../store/store.js';
import type { PoolMember } from '../store/pool-store.js';
import { sandboxRef } from '../session/environment-manager.js';
import { CREATED_AS_LABEL, POOL_LABEL, type PoolEngine, type PoolLimits } from './pool-engine.js';
import {
  askedTemplate,
  claimedOptions,
  describeTemplate,
  AGED_FILL_CPU_SHARES,
  AGED_FILL_CPUS,
  FILL_AGING_MS,
  IDLE_CPU_SHARES,
  idleOptions,
  sameTemplate,
  templateKey,
  templateOf,
  type CreateAsk,
  type PoolTemplate,
} from './pool-template.js';
import { moveDesktopDir } from './desktop-handover.js';
import type { DesktopStream } from '../desktop/desktop-stream.js';
import type { PoolsView, PoolView } from '../shared/pool-types.js';
import { NO_POOLS_REASON } from '../shared/warm-outcome.js';

type PoolsConfig = Config['pools'];

export type { PoolsView, PoolView };

export interface WarmPoolsDeps {
  store: Store;
  /** The engine calls beyond the provider contract; null: Docker is not usable here (pools serve nothing). */
  engine: () => PoolEngine | null;
  /** The docker provider. */
  provider: () => Promise<SandboxProvider>;
  /** What the backend provisions for a record (the same naming and labels a cold create uses). */
  specOf: (rec: SandboxRecord) => ProvisionSpec;
  environments: {
    connect(rec: SandboxRecord, provider: SandboxProvider): Promise<SandboxEnvironment>;
    forget(name: string): void;
  };
  desktop: {
    /**
     * Starts the pooled sandbox's desktop and nothing more (DesktopService.startPooled): not recorded, not
     * told, not followed, no status round — nobody's screen yet, and a person may be watching another.
     */
    start(name: string): Promise<{ running: boolean; reason: string | null }>;
    /**
     * The claimed sandbox's running desktop carried over to its new name with what this process knows of
     * it (the account it runs as, from its start at the fill): its first screen stream needs no probe.
     * False: nothing is known here (another process filled the pool), and `adopt` takes it up instead.
     */
    handedOver(member: string, name: string, env: SandboxEnvironment, ahead?: AheadStream): boolean;
    /**
     * A screen stream to the member's desktop opened while it waits (DesktopService.openAhead), handed
     * over at the claim: the claimer's first frame pays no relay exec. Absent: the first stream opens it.
     */
    openAhead?(member: string): Promise<AheadStream>;
    /** The claimed sandbox's running desktop taken up under its new name by a probe (recording as configured). */
    adopt(name: string): Promise<unknown>;
  };
  /**
   * The default session's shell, opened while the sandbox waits in the pool and handed to the claimer's
   * session at the claim, so the first command pays no shell start (absent: the first command opens it).
   */
  shells?: {
    open(env: SandboxEnvironment): Promise<PooledShell>;
  };
  /** The claimed sandbox's network policy, applied live (as `sandbox network` does). */
  applyNetwork(name: string, policy: NetworkPolicy): Promise<void>;
  config: () => PoolsConfig;
  /** Persists the templates (config.json) and returns the pools config now in force. */
  saveTemplates: (templates: PoolTemplateConfig[]) => PoolsConfig;
  log: Logger;
  /** Something a client shows changed (a pool's count or state). */
  changed: () => void;
  /** After a failed fill (not a full disk), the next try waits this long (default 30 s). */
  retryMs?: number;
  /** How often the service looks at its pools for dead or stale sandboxes (default 30 s). */
  checkEveryMs?: number;
  /** A claim's refill waits this long, so it does not compete with the claimer's first commands (default 3 s). */
  refillDelayMs?: number;
  /** A fill still running after this long is raised from the least CPU weight (default FILL_AGING_MS). */
  fillAgingMs?: number;
  /** A ready desktop member the freezer refused is paused again after this long (default 1 s). */
  pauseRetryMs?: number;
}

/** A screen stream opened ahead for a pooled desktop: the pool only hands it over or kills it. */
export type AheadStream = DesktopStream;

/** Tries to pause a ready desktop member before it is left running (see WarmPools.freeze). */
const PAUSE_ATTEMPTS = 3;

/** A session shell opened ahead for a pooled sandbox: the pool only hands it over or closes it. */
export interface PooledShell {
  /** Becomes the default session's shell of the claimed sandbox; false: it cannot (another user, other proxy variables). */
  handTo(name: string, env: SandboxEnvironment): boolean;
  close(): void;
}

/** What a create asks of a pool. */
export interface ClaimRequest {
  ask: CreateAsk;
  name: string;
  declaredDefaultCwd: string | null;
  typedDefaultCwd: string | null;
  user: string | null;
  network: NetworkPolicy;
}

export type ClaimOutcome = { warm: true; record: SandboxRecord } | { warm: false; reason: string };

/** A full disk: refilling stops (it would fail again and again) until `pool set` restarts it. */
export function isDiskFull(err: unknown): boolean {
  const cause = err instanceof Error ? (err as { cause?: unknown }).cause : undefined;
  const text = `${err instanceof Error ? err.message : String(err)} ${cause instanceof Error ? cause.message : ''}`;
  return /no space left on device|ENOSPC|disk quota exceeded/i.test(text);
}

const errText = (err: unknown): string =>
  err instanceof SandboxDeskError ? err.oneLine() : err instanceof Error ? err.message : String(err);

/** The limits a claimed sandbox gets: the template's own (none: the whole machine), full CPU weight. */
export function claimedLimits(options: Record<string, string>): PoolLimits {
  return {
    cpus: options.cpus !== undefined ? Number(options.cpus) : null,
    memoryMiB: options.memory !== undefined ? Number(options.memory) : null,
    cpuShares: 1024,
  };
}

function idleLimits(t: PoolTemplate): PoolLimits {
  const o = idleOptions(t);
  return { cpus: Number(o.cpus), memoryMiB: Number(o.memory), cpuShares: IDLE_CPU_SHARES };
}

/** A fill's limits once aged: a higher weight and cap (never past the template's own cpus), the idle memory. */
function agedLimits(t: PoolTemplate): PoolLimits {
  return { ...idleLimits(t), cpus: Math.min(t.cpus ?? AGED_FILL_CPUS, AGED_FILL_CPUS), cpuShares: AGED_FILL_CPU_SHARES };
}

/**
 * Warm pools (issue 37): per template, N sandboxes made and started ahead (the desktop too), hidden
 * from the user's list, claimed by a create that asks for exactly that template. The claim is one
 * store transaction (src/store/pool-store.ts) followed by idempotent engine steps (rename, limits,
 * the desktop's folder), so a service killed in between leaves a sandbox that is the user's and is
 * finished by `reconcile` at the next start — never one that is both the user's and the pool's.
 * Refilling (the service only: `start`) makes one sandbox at a time, capped at a quarter of a CPU with a low
 * CPU weight and its idle memory, so a running desktop is not starved.
 */
export class WarmPools {
  /** Members this process is making or removing: the pool's own calls may reach them. */
  private readonly busy = new Set<string>();
  private readonly stopped = new Map<string, string>();
  private readonly failed = new Map<string, { warning: string; retryAt: number }>();
  private started = false;
  private looping = false;
  private wanted = false;
  private disposed = false;
  private timers: NodeJS.Timeout[] = [];
  private idle: Promise<void> = Promise.resolve();
  private readonly later = new Set<Promise<void>>();
  /** Each ready member's default-session shell, opened at the fill (this process's members only). */
  private readonly warmShells = new Map<string, PooledShell>();
  /** Each ready desktop member's screen stream, opened at the fill (this process's members only). */
  private readonly warmStreams = new Map<string, AheadStream>();

  constructor(private readonly deps: WarmPoolsDeps) {}

  private templates(): Array<{ key: string; template: PoolTemplate; size: number }> {
    return this.deps.config().templates.map((t) => {
      const template = templateOf(t);
      return { key: templateKey(template), template, size: t.size };
    });
  }

  /** A member the pool itself is working on (fill, desktop start): the public API leaves the others alone. */
  isBusy(name: string): boolean {
    return this.busy.has(name);
  }

  list(): PoolsView {
    const cfg = this.deps.config();
    const members = this.deps.store.pools.list();
    const pools = this.templates().map(({ key, template, size }): PoolView => {
      const mine = members.filter((m) => m.template === key);
      const ready = mine.filter((m) => m.state === 'ready').length;
      const stopped = this.stopped.get(key) ?? null;
      const failed = this.failed.get(key)?.warning ?? null;
      return {
        key,
        template,
        description: describeTemplate(template),
        size,
        ready,
        filling: mine.length - ready,
        state: stopped ? 'stopped' : failed ? 'retrying' : ready >= size ? 'full' : 'filling',
        warning: stopped ?? failed,
        memoryMiB: size * idleMemoryMiB({ memoryMiB: template.memoryMiB ?? undefined, desktop: template.desktop }),
      };
    });
    return {
      memoryBudgetMiB: cfg.memoryBudgetMiB,
      memoryMiB: pools.reduce((s, p) => s + p.memoryMiB, 0),
      refilling: this.started,
      pools,
    };
  }

  // ---- claim ----------------------------------------------------------------------------------

  /** A ready sandbox of the asked template, made the user's; or why the create goes cold. */
  async claim(req: ClaimRequest): Promise<ClaimOutcome> {
    const pools = this.templates().filter((p) => p.size > 0);
    if (pools.length === 0) return { warm: false, reason: NO_POOLS_REASON };
    const asked = askedTemplate(req.ask);
    if ('reason' in asked) return { warm: false, reason: asked.reason };
    const pool = pools.find((p) => sameTemplate(p.template, asked.template));
    if (!pool)
      return {
        warm: false,
        reason: `no pool has this template (${describeTemplate(asked.template)}); the pools: ${pools.map((p) => describeTemplate(p.template)).join('; ')}`,
      };
    const stopped = this.stopped.get(pool.key);
    if (stopped) return { warm: false, reason: `the pool of ${describeTemplate(pool.template)} stopped: ${stopped}` };
    const engine = this.deps.engine();
    if (!engine) return { warm: false, reason: 'the Docker engine is not usable here' };
    try {
      return await this.claimFrom(engine, pool.key, pool.template, req);
    } finally {
      this.kickLater(this.deps.refillDelayMs ?? 3000);
    }
  }

  private async claimFrom(engine: PoolEngine, key: string, template: PoolTemplate, req: ClaimRequest): Promise<ClaimOutcome> {
    const current = await engine.imageId(template.image);
    const ready = this.deps.store.pools.list(key).filter((m) => m.state === 'ready');
    let skipped = 0;
    for (const m of ready) {
      const rec = this.deps.store.sandboxes.get(m.sandbox);
      // A sandbox of an image rebuilt since, or one that died or was removed behind the app's back, is
      // never handed out: the refill replaces it.
      if (!rec?.backendRef || m.imageId === null || m.imageId !== current) {
        skipped++;
        continue;
      }
      const c = await engine.inspect(rec.backendRef);
      // The container's own image, too, where it is the template's (a desktop's is the derived image).
      if (!c?.running || (!template.desktop && c.imageId !== current)) {
        skipped++;
        continue;
      }
      const claimed = this.deps.store.pools.claim(m.sandbox, {
        name: req.name,
        declaredDefaultCwd: req.declaredDefaultCwd,
        typedDefaultCwd: req.typedDefaultCwd,
        user: req.user,
        options: claimedOptions(template),
        createdAt: new Date().toISOString(),
      });
      // Another claim took it between our look and our transaction: try the next one.
      if (!claimed) continue;
      this.deps.changed();
      try {
        await this.finishClaim(m.sandbox, req.name, template.desktop, c.paused);
        if (req.network.mode !== 'open' || req.network.allow.length > 0) await this.deps.applyNetwork(req.name, req.network);
      } catch (err) {
        // It is the user's by now (the transaction committed) but not usable: removed, and the create goes cold.
        this.deps.log.warn({ sandbox: req.name, member: m.sandbox, err: errText(err) }, 'a claimed pooled sandbox could not be finished');
        await this.removeSandbox(req.name);
        return { warm: false, reason: `the pooled sandbox could not be handed over: ${errText(err)}` };
      }
      return { warm: true, record: this.deps.store.sandboxes.get(req.name)! };
    }
    if (skipped > 0) this.wanted = true;
    const filling = this.deps.store.pools.list(key).length - ready.length;
    return {
      warm: false,
      reason: `the pool of ${describeTemplate(template)} had no ready sandbox${filling > 0 ? ` (${filling} being made)` : ''}${skipped > 0 ? `; ${skipped} dead or of an older image, being replaced` : ''}`,
    };
  }

  /**
   * The engine's half of a claim, every step idempotent (reconcile runs it again after a crash): its idle
   * caps are lifted to what its options ask and a paused desktop is thawed (at once), a desktop's folder
   * inside the sandbox follows the name, and last the container takes the user's resource name — the
   * mark reconcile reads as "finished". The environment is connected anew meanwhile (its home as
   * measured in this incarnation, or measured now for another user), and the default session's shell
   * opened at the fill becomes the claimer's.
   */
  private async finishClaim(member: string, name: string, desktop: boolean, paused: boolean): Promise<void> {
    const engine = this.deps.engine();
    const rec = this.deps.store.sandboxes.get(name);
    const shell = this.warmShells.get(member);
    this.warmShells.delete(member);
    const ahead = this.warmStreams.get(member);
    this.warmStreams.delete(member);
    try {
      if (!engine || !rec?.backendRef) throw new SandboxDeskError('sandbox_missing', `sandbox ${name} has no container`);
      const ref = rec.backendRef;
      this.deps.environments.forget(member);
      const provider = await this.deps.provider();
      const limits = engine.setLimits(ref, claimedLimits(rec.options));
      const thawed = paused ? engine.unpause(ref) : Promise.resolve();
      const connected = thawed.then(() => this.deps.environments.connect(rec, provider));
      // The desktop's folder is moved by a process in the container, after the idle caps are lifted: under
      // them it competed with the whole thawing desktop for half a CPU (seconds on a busy machine).
      const moved = desktop ? Promise.all([limits, connected]).then(([, env]) => moveDesktopDir(engine, ref, env, member, name)) : limits;
      // The rename comes last: a container under the user's name is one whose claim is finished (reconcile).
      const [env] = await Promise.all([
        connected,
        Promise.all([moved, thawed]).then(() => engine.rename(ref, this.deps.specOf(rec).resourceName)),
      ]);
      if (shell && !shell.handTo(name, env)) shell.close();
      // Known here: carried over before the create answers, so its first stream opens at once. Not known:
      // taken up (a probe, its recording started as configured) beside the create's answer, not before
      // it — the desktop already runs, and the first screen stream finds it on its own.
      if (desktop && !this.deps.desktop.handedOver(member, name, env, ahead)) {
        void this.deps.desktop
          .adopt(name)
          .catch((err: unknown) => this.deps.log.warn({ sandbox: name, err: errText(err) }, 'pool: the claimed desktop was not taken up'));
      }
    } catch (err) {
      shell?.close();
      ahead?.kill();
      throw err;
    }
    if (!desktop) ahead?.kill();
  }

  // ---- settings -------------------------------------------------------------------------------

  /** `pool set`: a template's size (0 removes the pool); refused past the memory budget. */
  set(input: PoolTemplateConfig): PoolsView {
    const template = templateOf(input);
    const others = this.deps.config().templates.filter((t) => !sameTemplate(templateOf(t), template));
    const next = input.size > 0 ? [...others, input] : others;
    const problem = poolBudgetProblem(next, this.deps.config().memoryBudgetMiB);
    if (problem)
      throw new SandboxDeskError('invalid_input', problem, {
        hint: `\`sandbox-desk config set pools.memoryBudgetMiB N\` raises the budget; \`sandbox-desk pool list\` shows what each pool holds`,
      });
    this.deps.saveTemplates(next);
    // Setting a pool again restarts one that stopped (the disk was freed, the image fixed).
    const key = templateKey(template);
    this.stopped.delete(key);
    this.failed.delete(key);
    this.kick();
    this.deps.changed();
    return this.list();
  }

  /** `pool drain`: the pool (or every pool) emptied now and removed from the config (`pool set` brings it back). */
  async drain(input?: Pick<PoolTemplateConfig, 'image' | 'cpus' | 'memoryMiB' | 'desktop'>): Promise<{ removed: number }> {
    const all = this.deps.config().templates;
    const template = input ? templateOf(input) : null;
    if (template && !all.some((t) => sameTemplate(templateOf(t), template)))
      throw new SandboxDeskError('not_found', `no pool has the template ${describeTemplate(template)}`, {
        hint: '`sandbox-desk pool list` shows the pools',
      });
    const keep = template ? all.filter((t) => !sameTemplate(templateOf(t), template)) : [];
    this.deps.saveTemplates(keep);
    // A fill under way finishes first (the loop's next sweep would remove it; here it is removed at once).
    await this.idle;
    const keys = new Set(keep.map((t) => templateKey(templateOf(t))));
    let removed = 0;
    for (const m of this.deps.store.pools.list()) {
      if (keys.has(m.template)) continue;
      await this.removeSandbox(m.sandbox);
      removed++;
    }
    this.deps.changed();
    return { removed };
  }

  // ---- refill (the service) -------------------------------------------------------------------

  /** Reconciles what a previous service left, then keeps the pools full in the background. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    await this.reconcile().catch((err: unknown) => this.deps.log.warn({ err: errText(err) }, 'pools: reconcile failed'));
    const t = setInterval(() => this.kick(), this.deps.checkEveryMs ?? 30_000);
    t.unref();
    this.timers.push(t);
    this.kick();
  }

  /** Resolves when the refill loop has nothing left to do, a refill a claim asked for included (tests, benchmarks). */
  async settled(): Promise<void> {
    // The refill timers are unref'd (they must not keep a CLI or a closing service alive), so whoever
    // waits here holds the process open until they fire: without it a script awaiting settled() (the
    // warm benchmark) saw its event loop empty and Node exit 13 with the promise unsettled.
    const hold = setInterval(() => undefined, 60_000);
    try {
      while (this.later.size > 0 && !this.disposed) await Promise.all([...this.later]);
      await this.idle;
    } finally {
      clearInterval(hold);
    }
  }

  private kickLater(ms: number): void {
    if (ms <= 0) return this.kick();
    const later = new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        this.kick();
        resolve();
      }, ms);
      t.unref();
      this.timers.push(t);
    });
    this.later.add(later);
    void later.then(() => this.later.delete(later));
  }

  /** Asks the refill loop to look again (a claim took one, a setting changed). */
  kick(): void {
    this.wanted = true;
    if (!this.started || this.looping || this.disposed) return;
    this.looping = true;
    this.idle = this.loop().finally(() => (this.looping = false));
  }

  private async loop(): Promise<void> {
    while (this.wanted && !this.disposed) {
      this.wanted = false;
      try {
        await this.sweep();
        const job = this.nextFill();
        if (!job) continue;
        this.wanted = true;
        try {
          await this.fill(job.key, job.template);
          this.failed.delete(job.key);
        } catch (err) {
          this.onFillFailed(job.key, job.template, err);
        }
        this.deps.changed();
      } catch (err) {
        this.deps.log.warn({ err: errText(err) }, 'pools: refill pass failed');
      }
    }
  }

  private onFillFailed(key: string, template: PoolTemplate, err: unknown): void {
    const text = errText(err);
    if (isDiskFull(err)) {
      const warning = `the disk is full (${text}); creates go cold until \`sandbox-desk pool set\` restarts the pool`;
      this.stopped.set(key, warning);
      this.deps.log.warn({ pool: describeTemplate(template) }, `pool stopped: ${warning}`);
      return;
    }
    const retryMs = this.deps.retryMs ?? 30_000;
    this.failed.set(key, { warning: `the last refill failed: ${text}`, retryAt: Date.now() + retryMs });
    this.deps.log.warn({ pool: describeTemplate(template), err: text }, 'pool refill failed; retrying later');
    const t = setTimeout(() => this.kick(), retryMs);
    t.unref();
    this.timers.push(t);
  }

  /** The first pool short of its size that may be filled now. */
  private nextFill(): { key: string; template: PoolTemplate } | null {
    const members = this.deps.store.pools.list();
    for (const p of this.templates()) {
      if (this.stopped.has(p.key)) continue;
      const f = this.failed.get(p.key);
      if (f && f.retryAt > Date.now()) continue;
      if (members.filter((m) => m.template === p.key).length < p.size) return p;
    }
    return null;
  }

  /**
   * Removes members nobody may be handed: of a pool no longer configured or stopped, beyond a pool's
   * size, of an image rebuilt since, dead or removed behind the app's back.
   */
  private async sweep(): Promise<void> {
    // A member claimed by another process on this data dir (a CLI's create): its shell here is not the
    // claimer's and must not live on in the user's sandbox.
    for (const member of new Set([...this.warmShells.keys(), ...this.warmStreams.keys()]))
      if (!this.deps.store.pools.isMember(member)) this.closeWarm(member);
    const engine = this.deps.engine();
    const pools = new Map(this.templates().map((p) => [p.key, p]));
    const imageIds = new Map<string, string | null>();
    const counted = new Map<string, number>();
    for (const m of this.deps.store.pools.list()) {
      if (this.busy.has(m.sandbox) || m.state !== 'ready') continue;
      const pool = pools.get(m.template);
      const n = (counted.get(m.template) ?? 0) + 1;
      counted.set(m.template, n);
      let why: string | null = null;
      if (!pool || pool.size < n) why = 'its pool is smaller now';
      else if (this.stopped.has(m.template)) why = 'its pool stopped';
      else if (engine) {
        if (!imageIds.has(pool.key)) imageIds.set(pool.key, await engine.imageId(pool.template.image));
        const rec = this.deps.store.sandboxes.get(m.sandbox);
        const c = rec?.backendRef ? await engine.inspect(rec.backendRef) : null;
        const current = imageIds.get(pool.key);
        if (m.imageId !== current || (c && !pool.template.desktop && c.imageId !== current)) why = 'its image was rebuilt';
        else if (!c?.running) why = c ? 'it stopped' : 'its container is gone';
      }
      if (!why) continue;
      this.deps.log.info({ sandbox: m.sandbox, why }, 'pool: replacing a pooled sandbox');
      await this.removeSandbox(m.sandbox);
      this.wanted = true;
    }
  }

  /** Makes one pooled sandbox: a hidden row, the container (idle caps), started, connected, its desktop up. */
  private async fill(key: string, template: PoolTemplate): Promise<void> {
    const engine = this.deps.engine();
    if (!engine) throw new SandboxDeskError('engine_unreachable', 'the Docker engine is not usable here');
    const name = `pool-${key}-${randomBytes(4).toString('hex')}`;
    const now = new Date().toISOString();
    const rec: SandboxRecord = {
      name,
      backend: 'docker',
      image: template.image,
      user: null,
      declaredDefaultCwd: null,
      typedDefaultCwd: null,
      backendRef: null,
      mounts: [],
      env: {},
      options: idleOptions(template),
      createdAt: now,
      home: null,
      homeIncarnation: null,
      lastObservedCwd: null,
      lastObservedAt: null,
    };
    const store = this.deps.store;
    store.transaction(() => {
      store.sandboxes.insert(rec);
      store.pools.add(name, key, now);
    });
    this.busy.add(name);
    try {
      const imageId = await engine.imageId(template.image);
      if (!imageId) throw new SandboxDeskError('image_not_found', `image ${template.image} does not exist in the Docker engine`);
      const provider = await this.deps.provider();
      const base = this.deps.specOf(rec);
      const spec = { ...base, labels: { ...base.labels, [POOL_LABEL]: key, [CREATED_AS_LABEL]: base.resourceName } };
      const made = await provider.provision(spec);
      store.sandboxes.setProvisioned(name, made);
      if (made.backendRef) await engine.setLimits(made.backendRef, idleLimits(template));
      const provisioned = store.sandboxes.get(name)!;
      const aging = made.backendRef ? this.ageFill(engine, made.backendRef, name, template) : null;
      let env: SandboxEnvironment;
      try {
        await provider.start(sandboxRef(provisioned));
        env = await this.deps.environments.connect(provisioned, provider);
        if (template.desktop) {
          const st = await this.deps.desktop.start(name);
          if (!st.running)
            throw new SandboxDeskError(
              'backend_unavailable',
              `the pooled sandbox's desktop did not start: ${st.reason ?? 'no reason given'}`,
            );
        }
      } finally {
        await aging?.stop();
      }
      // Without it the claimer's first command opens the shell itself: slower, not wrong.
      const shell = await this.deps.shells?.open(env).catch((err: unknown) => {
        this.deps.log.warn({ sandbox: name, err: errText(err) }, 'pool: the default session shell was not opened ahead');
        return undefined;
      });
      if (shell) this.warmShells.set(name, shell);
      if (template.desktop && this.deps.desktop.openAhead) {
        // Without it the claimer's first stream starts its relay itself: slower, not wrong.
        const stream = await this.deps.desktop.openAhead(name).catch((err: unknown) => {
          this.deps.log.warn({ sandbox: name, err: errText(err) }, "pool: the desktop's screen stream was not opened ahead");
          return undefined;
        });
        if (stream) {
          this.warmStreams.set(name, stream);
          // Its relay ended while waiting (the desktop died): the claim goes on without it.
          stream.once('close', () => {
            if (this.warmStreams.get(name) === stream) this.warmStreams.delete(name);
          });
        }
      }
      // A waiting desktop (Xfce, Chromium) is frozen: it takes no CPU from a running one while it waits.
      // Unpaused at the claim (tens of ms, beside the rename). Not a plain sandbox: nothing runs in it.
      if (template.desktop && made.backendRef) await this.freeze(engine, made.backendRef, name);
      store.pools.markReady(name, imageId);
    } catch (err) {
      await this.removeSandbox(name);
      throw err;
    } finally {
      this.busy.delete(name);
    }
  }

  /**
   * The fill's start-up (container, environment, desktop) runs at the least CPU weight; one still running
   * after fillAgingMs is raised to AGED_FILL_CPU_SHARES and AGED_FILL_CPUS so it finishes under a busy desktop instead of
   * failing its readiness wait again at every retry. `stop` puts a raised member back to its idle
   * limits (a waiting member holds the least weight) once the start-up is over, failed or not.
   */
  private ageFill(engine: PoolEngine, ref: string, name: string, template: PoolTemplate): { stop(): Promise<void> } {
    let raised: Promise<void> | null = null;
    const timer = setTimeout(() => {
      this.deps.log.info(
        { sandbox: name, afterMs: this.deps.fillAgingMs ?? FILL_AGING_MS },
        'pool: a slow fill is raised from the least CPU weight',
      );
      // Handled here, not at stop: a refused update must not be an unhandled rejection meanwhile; the fill goes on.
      raised = engine
        .setLimits(ref, agedLimits(template))
        .catch((err: unknown) => this.deps.log.warn({ sandbox: name, err: errText(err) }, 'pool: a slow fill could not be raised'));
    }, this.deps.fillAgingMs ?? FILL_AGING_MS);
    timer.unref();
    return {
      stop: async () => {
        clearTimeout(timer);
        if (!raised) return;
        await raised;
        // A fill that failed is removed next (its container may be gone already): nothing to put back.
        await engine
          .setLimits(ref, idleLimits(template))
          .catch((err: unknown) => this.deps.log.warn({ sandbox: name, err: errText(err) }, 'pool: the idle weight was not restored'));
      },
    };
  }

  /**
   * Pauses a ready desktop member. The cgroup freezer can refuse under load ("unable to freeze": a task
   * would not stop in time; seen in bench/warm.ts at load 25): tried again, and if it still refuses the
   * member waits running under its idle caps (least weight, a quarter of a CPU) — slower to leave alone than a
   * frozen one, but the fill's work is not thrown away for it. A claim thaws only a paused one.
   */
  private async freeze(engine: PoolEngine, ref: string, name: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await engine.pause(ref);
      } catch (err) {
        if (attempt >= PAUSE_ATTEMPTS) {
          this.deps.log.warn(
            { sandbox: name, err: errText(err) },
            'pool: a ready desktop could not be paused; it waits running under its idle caps',
          );
          return;
        }
        await new Promise((r) => setTimeout(r, this.deps.pauseRetryMs ?? 1000));
      }
    }
  }

  /** The shell and the screen stream opened ahead for a member, closed (it is gone, or claimed elsewhere). */
  private closeWarm(member: string): void {
    this.warmShells.get(member)?.close();
    this.warmShells.delete(member);
    this.warmStreams.get(member)?.kill();
    this.warmStreams.delete(member);
  }

  /** Removes a sandbox (a member, or a claim that could not be finished): container, environment, row. */
  private async removeSandbox(name: string): Promise<void> {
    const rec = this.deps.store.sandboxes.get(name);
    if (!rec) return;
    this.busy.add(name);
    this.closeWarm(name);
    try {
      this.deps.environments.forget(name);
      if (rec.backendRef) {
        const provider = await this.deps.provider();
        await provider.remove(sandboxRef(rec), { force: true }).catch((err: unknown) => {
          this.deps.log.warn({ sandbox: name, err: errText(err) }, 'pool: could not remove a pooled container');
        });
      }
      this.deps.store.sandboxes.delete(name);
    } finally {
      this.busy.delete(name);
    }
  }

  /**
   * What a previous service left: fills it was making when it ended (removed), claims it committed but
   * did not finish (finished now: the sandbox is the user's), and pooled containers no row knows (a
   * fill ended between the engine's create and the row's update: removed).
   */
  async reconcile(): Promise<void> {
    const store = this.deps.store;
    for (const m of store.pools.list()) if (m.state === 'filling' && !this.busy.has(m.sandbox)) await this.removeSandbox(m.sandbox);
    const engine = this.deps.engine();
    if (!engine) return;
    const known = new Map<string, { rec: SandboxRecord; member: PoolMember | undefined }>();
    for (const m of store.pools.list()) {
      const rec = store.sandboxes.get(m.sandbox);
      if (rec?.backendRef) known.set(rec.backendRef, { rec, member: m });
    }
    for (const rec of store.sandboxes.list()) if (rec.backendRef) known.set(rec.backendRef, { rec, member: undefined });
    for (const c of await engine.listPooled(store.instanceId)) {
      const k = known.get(c.id);
      if (k?.member) continue;
      if (k) {
        if (c.name === this.deps.specOf(k.rec).resourceName) continue;
        const member = c.labels['io.sandbox-desk.sandbox'] ?? c.name;
        this.deps.log.info({ sandbox: k.rec.name, container: c.name }, 'pool: finishing a claim an earlier service began');
        const desktop = k.rec.options.desktop === 'true';
        await this.finishClaim(member, k.rec.name, desktop && c.running, c.paused).catch((err: unknown) =>
          this.deps.log.warn({ sandbox: k.rec.name, err: errText(err) }, 'pool: could not finish an earlier claim'),
        );
        continue;
      }
      this.deps.log.info({ container: c.name }, 'pool: removing a pooled container no row knows');
      const provider = await this.deps.provider();
      await provider
        .remove({ name: c.name, backendRef: c.id, image: null, user: null, mounts: [], env: {}, options: {} }, { force: true })
        .catch((err: unknown) => this.deps.log.warn({ container: c.name, err: errText(err) }, 'pool: could not remove'));
    }
  }

  /** Stops refilling; waits (at most 20 s) for a fill under way, so it does not outlive the store. */
  async dispose(): Promise<void> {
    this.disposed = true;
    for (const t of this.timers.splice(0)) clearTimeout(t);
    for (const member of new Set([...this.warmShells.keys(), ...this.warmStreams.keys()])) this.closeWarm(member);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.idle, new Promise<void>((r) => (timer = setTimeout(r, 20_000)))]);
    clearTimeout(timer);
    // And the shell of a fill that finished meanwhile.
    for (const member of new Set([...this.warmShells.keys(), ...this.warmStreams.keys()])) this.closeWarm(member);
  }
}
