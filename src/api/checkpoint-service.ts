import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxDeskError } from '../shared/errors.js';
import type { ExecWarning } from '../shared/exec-result.js';
import type { CoreEventBus } from '../shared/core-events.js';
import type { CheckpointArtifact, CheckpointCapability, ProgressEvent, SandboxProvider } from '../sandbox/provider.js';
import { sandboxRef, type EnvironmentManager } from '../session/environment-manager.js';
import type { CheckpointRecord } from '../store/checkpoint-store.js';
import type { SandboxRecord } from '../store/sandbox-store.js';
import type { Store } from '../store/store.js';
import type { Logger } from '../platform/log.js';
import {
  CheckpointId,
  CheckpointRequest,
  ForkRequest,
  SandboxName,
  type CheckpointInfo,
  type CheckpointResult,
  type ForkResult,
  type RestoreResult,
  type SandboxInfo,
} from './contract.js';
import type { SandboxOperations } from './sandbox-operations.js';
import { newSandboxRecord, provisionSpec, toSessionInfo } from './sandbox-info.js';
import { validate } from './validate.js';
import { processAlive } from '../platform/process-alive.js';
import { captureRunning, giveUp, restartWhatRan, type RestartHost, type RunningBefore } from './restore-restarts.js';

export interface CheckpointServiceDeps {
  store: Store;
  environments: EnvironmentManager;
  operations: SandboxOperations;
  events: CoreEventBus;
  log: Logger;
  providerOf(backend: string): Promise<SandboxProvider>;
  /** The sandbox's record, or `not_found` with a suggestion. */
  record(name: string): SandboxRecord;
  info(name: string): Promise<SandboxInfo>;
  /** Ends what is tied to the sandbox's current incarnation before it is replaced (its session shells). */
  beforeReplace(name: string, provider: SandboxProvider): Promise<void>;
  /** Runs a no-op in the session so its cwd is measured (or walked, with the usual warning) in the sandbox. */
  remeasure(sandbox: string, session: string): Promise<ExecWarning[]>;
  /**
   * What a restore or fork starts again (the desktop, session shells, terminals: restore-restarts.ts).
   * Absent: nothing is restarted (the sandbox comes back with no desktop, shell or terminal running).
   */
  restarts?: RestartHost;
  /**
   * A restored or forked sandbox keeps its network policy (a fork inherits its source's): called with
   * the source and the new sandbox once the backend made it, before its first command.
   */
  keepNetworkPolicy?(source: string, target: string, provider: SandboxProvider): Promise<void>;
}

interface Progress {
  onProgress?: ((e: ProgressEvent) => void) | undefined;
}

/**
 * Checkpoints, restore, fork and pause of any backend that has `SandboxProvider.checkpoints`. The app
 * owns the bookkeeping — ids, labels, the sessions' cwd records and the two other cwd layers — and the
 * backend owns the bytes. A record is written `saving` before the backend is asked and made `ready` only
 * after it returned, so a failure (a full disk) or a killed app never leaves a half-made checkpoint
 * listed; `recoverInterrupted` cleans up what a killed app left.
 */
export class CheckpointService {
  constructor(private readonly d: CheckpointServiceDeps) {}

  private dirOf(id: string): string {
    return join(this.d.store.dataDir, 'checkpoints', id);
  }

  private capability(provider: SandboxProvider): CheckpointCapability {
    if (!provider.checkpoints)
      throw new SandboxDeskError(
        'unsupported',
        `backend ${provider.name} does not support checkpoints (it has no \`checkpoints\` capability)`,
        {
          hint: 'use a backend that does: docker, qemu, or a plugin that implements SandboxProvider.checkpoints',
          details: { capability: 'checkpoints' },
        },
      );
    return provider.checkpoints;
  }

  private recovered: Promise<unknown> | null = null;

  /** The first checkpoint call of this process cleans up what an interrupted one left (once). */
  /**
   * Before each checkpoint call, not once per process: the service lives for days, and a caller killed
   * mid-commit (or an engine finishing a commit after its cleanup) leaves something behind at any time.
   * Calls that come while a sweep runs share it.
   */
  private ensureRecovered(): Promise<unknown> {
    this.recovered ??= this.recoverInterrupted()
      .catch((err: unknown) => {
        this.d.log.warn({ err: String(err) }, 'could not clean up interrupted checkpoints');
      })
      .finally(() => (this.recovered = null));
    return this.recovered;
  }

  private newId(): string {
    const taken = new Set(this.d.store.checkpoints.ids());
    for (;;) {
      const id = randomBytes(6).toString('hex');
      if (!taken.has(id)) return id;
    }
  }

  /** On startup: a `saving` record is an interrupted checkpoint (the app was killed). Its artifact and files go. */
  async recoverInterrupted(): Promise<string[]> {
    const cleaned: string[] = [];
    for (const rec of this.d.store.checkpoints.listSaving()) {
      // A live owner — another process, or this one (a long-lived service saving it right now) — is still
      // making it: not ours to clean. Only the record of a dead owner is an interrupted checkpoint.
      if (rec.ownerPid !== null && processAlive(rec.ownerPid)) continue;
      try {
        const provider = await this.d.providerOf(rec.backend);
        // The backend names its resources by the id (an image tag, a file): removing by a guessed
        // artifact is safe because a missing one is not an error.
        if (provider.checkpoints)
          await provider.checkpoints.removeCheckpoint(guessedArtifact(rec, this.dirOf(rec.id))).catch(() => undefined);
      } catch {
        // The backend is not loaded (a plugin gone): the record still goes, it was never usable.
      }
      rmSync(this.dirOf(rec.id), { recursive: true, force: true });
      this.d.store.checkpoints.delete(rec.id);
      cleaned.push(rec.id);
      this.d.log.warn({ checkpoint: rec.id, sandbox: rec.sandbox }, 'removed a checkpoint left half-made by an interrupted app');
    }
    await this.removeUnrecorded();
    return cleaned;
  }

  /**
   * What an engine made for a checkpoint after its cleanup had run (a commit that outlived its killed
   * caller by more than the cleanup waited): this data directory's checkpoint images whose id has no
   * record. Read against the store after the engine listed them, so a checkpoint being saved (its
   * record is written before the backend is asked) is never taken for one.
   */
  private async removeUnrecorded(): Promise<void> {
    const backends = new Set([...this.d.store.sandboxes.list().map((s) => s.backend), ...this.d.store.checkpoints.backends()]);
    const labels = { 'io.sandbox-desk.instance': this.d.store.instanceId };
    for (const backend of backends) {
      try {
        const provider = await this.d.providerOf(backend);
        const removed =
          (await provider.checkpoints?.removeUnrecorded?.(labels, (id) => this.d.store.checkpoints.get(id) !== undefined)) ?? [];
        for (const id of removed)
          this.d.log.warn({ checkpoint: id, backend }, 'removed the image of an interrupted checkpoint, made after its cleanup');
      } catch (err) {
        // The engine is down or the plugin gone: the next checkpoint call of another process tries again.
        this.d.log.warn({ backend, err: String(err) }, 'could not look for images of interrupted checkpoints');
      }
    }
  }

  async checkpoint(input: CheckpointRequest, opts: Progress = {}): Promise<CheckpointResult> {
    const req = validate(CheckpointRequest, input);
    const rec = this.d.record(req.sandbox);
    await this.ensureRecovered();
    const provider = await this.d.providerOf(rec.backend);
    const cap = this.capability(provider);
    const ref = sandboxRef(rec);
    const warnings: ExecWarning[] = [];
    const status = await provider.status(ref);
    if (status.state === 'missing')
      throw new SandboxDeskError('sandbox_missing', `sandbox ${rec.name} is gone: ${status.detail ?? 'removed outside Sandbox Desk'}`);
    if (req.memory) {
      const m = await cap.memorySupport(ref);
      if (!m.supported)
        throw new SandboxDeskError(
          'unsupported',
          `backend ${provider.name} cannot save sandbox ${rec.name}'s memory: ${m.reason ?? 'not supported'}`,
          {
            hint: 'checkpoint without --memory to save the disk only',
            details: { capability: 'checkpoints.memory' },
          },
        );
      if (status.state !== 'running' && status.state !== 'paused')
        throw new SandboxDeskError('refused', `sandbox ${rec.name} is ${status.state}: there is no memory to save`, {
          hint: `start it first (\`sandbox-desk sandbox start ${rec.name}\`), or checkpoint without --memory`,
        });
    } else if (status.state === 'stopped') {
      warnings.push({
        code: 'checkpoint_disk_only',
        message: `sandbox ${rec.name} is stopped: the checkpoint holds its disk only, no running processes`,
      });
    }
    const id = this.newId();
    const dir = this.dirOf(id);
    const fresh = this.d.store.sandboxes.get(rec.name) ?? rec;
    const record: Omit<CheckpointRecord, 'state' | 'artifact' | 'sizeBytes' | 'ownerPid'> = {
      id,
      sandbox: rec.name,
      backend: provider.name,
      label: req.label ?? null,
      createdAt: new Date().toISOString(),
      memory: req.memory,
      cwd: {
        sessions: this.d.store.sessions.list(rec.name),
        lastObservedCwd: fresh.lastObservedCwd,
        lastObservedAt: fresh.lastObservedAt,
        declaredDefaultCwd: fresh.declaredDefaultCwd,
      },
      source: { image: rec.image, user: rec.user, options: rec.options, mounts: rec.mounts, env: rec.env },
    };
    // The record first, then the folder: a process killed in between leaves a record to clean up, never a stray folder.
    this.d.store.checkpoints.insertSaving(record);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.d.events.publish({ topic: 'checkpoint', sandbox: rec.name, checkpoint: id, phase: 'saving', message: 'saving' });
    let artifact: CheckpointArtifact;
    try {
      artifact = await this.d.operations.run(rec.name, 'checkpoint', opts.onProgress, (op) =>
        cap.checkpoint(
          ref,
          { id, memory: req.memory, dir, labels: { ...provisionSpec(rec, this.d.store.instanceId).labels } },
          {
            ...op,
            progress: (e) => {
              op.progress?.(e);
              this.d.events.publish({ topic: 'checkpoint', sandbox: rec.name, checkpoint: id, phase: 'saving', message: e.message });
            },
          },
        ),
      );
    } catch (err) {
      // Nothing half-written stays: whatever the backend made under this id goes with the record.
      await cap
        .removeCheckpoint(guessedArtifact({ ...record, state: 'saving', artifact: null, sizeBytes: null, ownerPid: null }, dir))
        .catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
      this.d.store.checkpoints.delete(id);
      this.d.events.publish({
        topic: 'checkpoint',
        sandbox: rec.name,
        checkpoint: id,
        phase: 'failed',
        message: String((err as Error).message ?? err),
      });
      throw err;
    }
    this.d.store.checkpoints.markReady(id, artifact);
    this.d.events.publish({ topic: 'checkpoint', sandbox: rec.name, checkpoint: id, phase: 'ready' });
    const saved = this.d.store.checkpoints.get(id)!;
    return { checkpoint: toInfo(saved, null), warnings: [...warnings, ...this.d.environments.takeWarnings(rec.name)] };
  }

  async list(sandbox?: string): Promise<CheckpointInfo[]> {
    if (sandbox !== undefined) validate(SandboxName, sandbox);
    await this.ensureRecovered();
    const out: CheckpointInfo[] = [];
    for (const rec of this.d.store.checkpoints.listReady(sandbox)) out.push(toInfo(rec, await this.brokenReason(rec)));
    return out;
  }

  /** null when the checkpoint is usable, else why not (the backend's verify, or the backend is gone). */
  private async brokenReason(rec: CheckpointRecord): Promise<string | null> {
    if (!rec.artifact) return 'the checkpoint was never finished';
    try {
      const provider = await this.d.providerOf(rec.backend);
      if (!provider.checkpoints) return `backend ${rec.backend} no longer supports checkpoints`;
      const v = await provider.checkpoints.verify(rec.artifact);
      return v.ok ? null : (v.detail ?? 'the backend cannot find what it saved');
    } catch (err) {
      return err instanceof SandboxDeskError ? err.oneLine() : String(err);
    }
  }

  private get(id: string): CheckpointRecord {
    validate(CheckpointId, id);
    const rec = this.d.store.checkpoints.get(id);
    if (!rec || rec.state !== 'ready')
      throw new SandboxDeskError('not_found', `no checkpoint ${id}`, { hint: 'see `sandbox-desk checkpoint list`' });
    return rec;
  }

  /** The checkpoint and its artifact, refused with a clear error when it is broken. */
  private async usable(id: string): Promise<CheckpointRecord & { artifact: CheckpointArtifact }> {
    const cp = this.get(id);
    const broken = await this.brokenReason(cp);
    if (broken || !cp.artifact)
      throw new SandboxDeskError('not_found', `checkpoint ${id} is broken: ${broken ?? 'no artifact'}`, {
        hint: `remove it with \`sandbox-desk checkpoint rm ${id}\``,
      });
    return cp as CheckpointRecord & { artifact: CheckpointArtifact };
  }

  async restore(sandbox: string, id: string, opts: Progress = {}): Promise<RestoreResult> {
    const rec = this.d.record(sandbox);
    const cp = this.get(id);
    if (cp.sandbox !== rec.name)
      throw new SandboxDeskError('refused', `checkpoint ${id} was taken of sandbox ${cp.sandbox}, not ${rec.name}`, {
        hint: `restore it onto ${cp.sandbox}, or make a new sandbox from it: \`sandbox-desk sandbox fork ${cp.sandbox} ${id} --as NEW\``,
      });
    const provider = await this.d.providerOf(rec.backend);
    const cap = this.capability(provider);
    const usable = await this.usable(id);
    // What runs now comes back after the restore (restore-restarts.ts); its terminals are kept by id from here.
    const before = await this.captureRunning(rec.name, true);
    this.d.events.publish({ topic: 'checkpoint', sandbox: rec.name, checkpoint: id, phase: 'restoring' });
    let warnings: ExecWarning[];
    try {
      await this.d.beforeReplace(rec.name, provider);
      // The old incarnation ends here: its shells, terminals and desktop connection end with it.
      this.d.environments.drop(rec.name, 'restarting');
      warnings = await this.d.operations.run(rec.name, 'restore', opts.onProgress, async (op) => {
        const made = await cap.restore(sandboxRef(rec), usable.artifact, op);
        this.d.store.sandboxes.setProvisioned(rec.name, made);
        await this.d.keepNetworkPolicy?.(rec.name, rec.name, provider);
        this.writeCwdLayers(rec.name, cp);
        op.progress?.({ step: 'sessions', message: "measuring the sessions' directories in the restored sandbox" });
        const measured = await this.reconnectAndRemeasure(rec.name, provider, cp, before.shells);
        return [...measured, ...(await this.restart(rec.name, before, cp, op.progress))];
      });
    } catch (err) {
      if (this.d.restarts) giveUp(this.d.restarts, before);
      this.d.events.publish({
        topic: 'checkpoint',
        sandbox: rec.name,
        checkpoint: id,
        phase: 'failed',
        message: String((err as Error).message ?? err),
      });
      throw err;
    }
    this.d.events.publish({ topic: 'checkpoint', sandbox: rec.name, checkpoint: id, phase: 'restored' });
    this.d.events.publish({ topic: 'sandbox', sandbox: rec.name, reason: 'restored' });
    return {
      sandbox: await this.d.info(rec.name),
      sessions: this.d.store.sessions.list(rec.name).map(toSessionInfo),
      warnings: [...warnings, ...this.d.environments.takeWarnings(rec.name)],
    };
  }

  private async captureRunning(sandbox: string, holdTerminals: boolean): Promise<RunningBefore> {
    if (!this.d.restarts) return { desktop: null, shells: [], terminals: [] };
    return captureRunning(this.d.restarts, sandbox, { holdTerminals });
  }

  /** Starts again in `target` what ran before (its session shells are opened by the re-measure). */
  private async restart(
    target: string,
    before: RunningBefore,
    cp: CheckpointRecord,
    progress: ((e: ProgressEvent) => void) | undefined,
  ): Promise<ExecWarning[]> {
    if (!this.d.restarts) return [];
    const sessions = cp.cwd.sessions.map((s) => s.key);
    // Shells of sessions with a cwd were opened by the re-measure already.
    const measured = new Set(cp.cwd.sessions.filter((s) => s.cwd !== null).map((s) => s.key));
    return restartWhatRan(
      this.d.restarts,
      target,
      { ...before, shells: before.shells.filter((s) => !measured.has(s)) },
      sessions,
      progress,
    );
  }

  async fork(input: ForkRequest, opts: Progress = {}): Promise<ForkResult> {
    const req = validate(ForkRequest, input);
    const cp = this.get(req.checkpoint);
    if (cp.sandbox !== req.sandbox)
      throw new SandboxDeskError('refused', `checkpoint ${req.checkpoint} was taken of sandbox ${cp.sandbox}, not ${req.sandbox}`, {
        hint: `fork it as \`sandbox-desk sandbox fork ${cp.sandbox} ${req.checkpoint} --as ${req.as}\``,
      });
    const names = req.count === undefined ? [req.as] : Array.from({ length: req.count }, (_, i) => `${req.as}-${i + 1}`);
    // Every name is checked before anything is made: a taken one refuses the whole fork.
    for (const n of names) {
      validate(SandboxName, n);
      if (this.d.store.sandboxes.get(n))
        throw new SandboxDeskError('name_taken', `a sandbox named ${n} already exists`, {
          hint: 'choose another --as name, or remove the old sandbox with `sandbox-desk sandbox rm`',
        });
    }
    const provider = await this.d.providerOf(cp.backend);
    const cap = this.capability(provider);
    const usable = await this.usable(req.checkpoint);
    // Each fork starts what runs in its source now (restore-restarts.ts); the source keeps its terminals.
    const before = await this.captureRunning(req.sandbox, false);
    this.d.events.publish({ topic: 'checkpoint', sandbox: req.sandbox, checkpoint: cp.id, phase: 'forking', message: names.join(' ') });
    const made: string[] = [];
    const warnings: ExecWarning[] = [];
    try {
      await this.d.operations.run(req.sandbox, 'fork', opts.onProgress, async (op) => {
        const src = cp.source;
        // The rows first (they reserve the names), then the backend makes the forks side by side.
        const recs = names.map((name) => {
          // A fork inherits the source's options (limits, desktop, a network policy when there is one).
          const rec = newSandboxRecord({
            name,
            backend: provider.name,
            image: src.image ?? undefined,
            user: src.user ?? undefined,
            declaredDefaultCwd: cp.cwd.declaredDefaultCwd,
            mounts: src.mounts ?? [],
            env: src.env ?? {},
            options: src.options,
          });
          this.d.store.sandboxes.insert(rec);
          made.push(name);
          return rec;
        });
        // allSettled: every fork has finished (and recorded its container) before a failure cleans up.
        const settled = await Promise.allSettled(
          recs.map(async (rec) => {
            op.progress?.({ step: 'fork', message: `making ${rec.name} from checkpoint ${cp.id}` });
            const res = await cap.fork(usable.artifact, provisionSpec(rec, this.d.store.instanceId), op);
            this.d.store.sandboxes.setProvisioned(rec.name, res);
            await this.d.keepNetworkPolicy?.(req.sandbox, rec.name, provider);
          }),
        );
        const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
        if (failed) throw failed.reason;
        const measured = await Promise.all(
          names.map(async (name) => {
            this.writeCwdLayers(name, cp);
            const w = await this.reconnectAndRemeasure(name, provider, cp, before.shells);
            const restarted = await this.restart(name, before, cp, op.progress);
            this.d.events.publish({ topic: 'sandbox', sandbox: name, reason: 'created' });
            return [...w, ...restarted];
          }),
        );
        warnings.push(...measured.flat());
      });
    } catch (err) {
      // All or nothing: the forks already made are removed again.
      for (const name of made) {
        const rec = this.d.store.sandboxes.get(name);
        this.d.environments.forget(name);
        if (rec?.backendRef) await provider.remove(sandboxRef(rec), { force: true }).catch(() => undefined);
        this.d.store.sandboxes.delete(name);
      }
      this.d.events.publish({
        topic: 'checkpoint',
        sandbox: req.sandbox,
        checkpoint: cp.id,
        phase: 'failed',
        message: String((err as Error).message ?? err),
      });
      throw err;
    }
    this.d.events.publish({ topic: 'checkpoint', sandbox: req.sandbox, checkpoint: cp.id, phase: 'forked', message: names.join(' ') });
    const sandboxes: SandboxInfo[] = [];
    for (const n of names) sandboxes.push(await this.d.info(n));
    return { sandboxes, warnings };
  }

  async remove(id: string): Promise<{ removed: string }> {
    validate(CheckpointId, id);
    const cp = this.d.store.checkpoints.get(id);
    if (!cp) throw new SandboxDeskError('not_found', `no checkpoint ${id}`, { hint: 'see `sandbox-desk checkpoint list`' });
    if (cp.artifact) {
      const provider = await this.d.providerOf(cp.backend);
      await provider.checkpoints?.removeCheckpoint(cp.artifact);
    }
    rmSync(this.dirOf(id), { recursive: true, force: true });
    this.d.store.checkpoints.delete(id);
    this.d.events.publish({ topic: 'checkpoint', sandbox: cp.sandbox, checkpoint: id, phase: 'removed' });
    return { removed: id };
  }

  async pause(name: string): Promise<SandboxInfo> {
    const rec = this.d.record(name);
    const provider = await this.d.providerOf(rec.backend);
    await this.capability(provider).pause(sandboxRef(rec));
    this.d.events.publish({ topic: 'sandbox', sandbox: name, reason: 'paused' });
    return this.d.info(name);
  }

  async resume(name: string): Promise<SandboxInfo> {
    const rec = this.d.record(name);
    const provider = await this.d.providerOf(rec.backend);
    await this.capability(provider).resume(sandboxRef(rec));
    this.d.events.publish({ topic: 'sandbox', sandbox: name, reason: 'resumed' });
    return this.d.info(name);
  }

  /** The three cwd layers as they were at the checkpoint: sessions (marked restored_from), layer b, layer c. */
  private writeCwdLayers(name: string, cp: CheckpointRecord): void {
    this.d.store.transaction(() => {
      this.d.store.sessions.replaceFromCheckpoint(name, cp.id, cp.cwd.sessions);
      this.d.store.sandboxes.restoreCwdLayers(name, cp.cwd);
    });
  }

  /**
   * Connects to the new incarnation, then measures each session's cwd there (a missing one is walked,
   * with a warning). A session whose shell was up before (`shells`) is measured in its shell, which
   * opens it again at that cwd; the others by a one-shot command.
   */
  private async reconnectAndRemeasure(
    name: string,
    provider: SandboxProvider,
    cp: CheckpointRecord,
    shells: readonly string[],
  ): Promise<ExecWarning[]> {
    await this.d.environments.connect(this.d.record(name), provider);
    const withShell = new Set(shells);
    // Side by side: each session's measure is its own command.
    const per = await Promise.all(
      cp.cwd.sessions
        .filter((s) => s.cwd !== null)
        .map(async (s) => {
          const r = await (withShell.has(s.key) && this.d.restarts
            ? this.d.restarts.openShell(name, s.key)
            : this.d.remeasure(name, s.key));
          return r.map((w) => ({ ...w, message: `${name} session ${JSON.stringify(s.key)}: ${w.message}` }));
        }),
    );
    return per.flat();
  }
}

/**
 * The artifact a backend would have made for this id, for cleaning up after a checkpoint that never
 * returned: image backends (docker, the podman plugin) tag `sandbox-desk/checkpoint:<id>`; file backends
 * keep their files in the checkpoint dir, which is removed with it (after this cleanup: what the backend
 * noted there before it began, docker's pending commit, is read by it). A missing artifact is not an error.
 */
function guessedArtifact(rec: CheckpointRecord, dir: string): CheckpointArtifact {
  return {
    ref: `sandbox-desk/checkpoint:${rec.id}`,
    memory: rec.memory,
    sizeBytes: null,
    details: { interrupted: true, id: rec.id, dir },
  };
}

function toInfo(rec: CheckpointRecord, broken: string | null): CheckpointInfo {
  return {
    id: rec.id,
    sandbox: rec.sandbox,
    backend: rec.backend,
    label: rec.label,
    createdAt: rec.createdAt,
    sizeBytes: rec.sizeBytes,
    memory: rec.memory,
    broken: broken !== null,
    brokenDetail: broken,
    sessions: rec.cwd.sessions.map((s) => ({ key: s.key, cwd: s.cwd })),
  };
}
