import { join } from 'node:path';
import type { z } from 'zod';
import { SandboxDeskError } from '../shared/errors.js';
import { didYouMean } from '../shared/did-you-mean.js';
import type { ExecWarning } from '../shared/exec-result.js';
import type { DisposableStore } from '../shared/lifecycle.js';
import { CoreEventBus } from '../shared/core-events.js';
import { runCommand, type ExecOutcome } from '../session/run-command.js';
import { SessionAttach } from '../session/session-attach.js';
import { EnvironmentManager, sandboxRef } from '../session/environment-manager.js';
import { commandContext, planSession, type SessionPlan } from '../session/session-plan.js';
import { SessionIo } from '../session/session-io.js';
import { createChildSession } from '../session/session-lineage.js';
import { ShellPool } from '../exec/shell-pool.js';
import { SessionShell } from '../exec/session-shell.js';
import { SessionTurns, type SessionTurn } from '../session/session-turns.js';
import { DesktopService } from '../desktop/desktop-service.js';
import type { LifecycleContext, ProgressEvent, SandboxEnvironment, SandboxProvider } from '../sandbox/provider.js';
import type { ProviderRegistry } from '../sandbox/registry.js';
import { settingsFromConfig, type PluginSettingsInput } from '../sandbox/plugins/plugin-settings.js';
import type { PluginReport } from '../sandbox/plugins/plugin-manager.js';
import type { PluginLogger } from '../sandbox/plugin-api.js';
import { resolveDataDir } from '../platform/data-dir.js';
import { DEFAULT_CONFIG, loadConfig, withKey, writeConfigFile, type Config } from '../platform/config.js';
import { silentLogger, type Logger } from '../platform/log.js';
import { homePaths, resolvePaths, type AppPaths } from '../platform/paths.js';
import { WarmPools } from '../pool/warm-pools.js';
import { DockerPoolEngine, type PoolEngine } from '../pool/pool-engine.js';
import { askedTemplate, describeTemplate } from '../pool/pool-template.js';
import type { SandboxRecord } from '../store/sandbox-store.js';
import { DEFAULT_SESSION } from '../store/session-store.js';
import { Store } from '../store/store.js';
import { builtinRegistry } from './builtin-providers.js';
import { PluginLoader } from './plugin-loader.js';
import { isCancelled, SandboxOperations } from './sandbox-operations.js';
import { ImageService } from './image-service.js';
import { vmAccel } from './vm-accel.js';
import { LogService } from './log-service.js';
import { StatsService } from './stats-service.js';
import { DockerProvider } from '../sandbox/docker/docker-provider.js';
import { QemuProvider } from '../sandbox/qemu/qemu-provider.js';
import { takeUpTemplateDesktop } from './template-desktop-takeup.js';
import { execRun } from '../pool/desktop-handover.js';
import { CheckpointService } from './checkpoint-service.js';
import { newSandboxRecord, provisionSpec, sandboxInfo, toSessionInfo, unavailableInfo } from './sandbox-info.js';
import {
  CreateSandboxRequest,
  CreateSessionRequest,
  ExecRequest,
  RemoveSandboxRequest,
  SandboxName,
  SessionKey,
  type CreateSandboxResult,
  type SandboxInfo,
  type SandboxOperation,
  type SessionInfo,
} from './contract.js';
import { validate } from './validate.js';
import { publishStoreChanges } from './store-events.js';
import { EventRelay } from './event-relay.js';
import { EngineWatch } from './engine-watch.js';
import { OperationTracker } from './operation-tracker.js';
import { publishDesktopChanges } from './desktop-events.js';
import { withDeadline } from './backend-timeout.js';
import { trackImageTasks } from './image-task-operations.js';
import { PluginStatusWatch } from './plugin-status-watch.js';
import type { OperationView } from '../shared/core-events.js';
import { NetworkService, type NetworkChange } from './network-service.js';
import type { NetworkPolicy } from '../shared/network-policy.js';
import { ReplayJournal } from './replay-journal.js';
import { RunningCommands } from './running-commands.js';
import { ReplayService } from './replay-service.js';
import { screenRecordings } from './replay-screen-binding.js';
import { commandEvent, wireReplay } from './replay-wiring.js';

export interface SandboxDeskOptions {
  dataDir?: string;
  registry?: ProviderRegistry;
  /**
   * The configuration (src/platform/config.ts: every default lives there). Absent: read from
   * `config.json` — in `dataDir` when one is given (a one-folder home, like SANDBOX_DESK_HOME), else
   * from the XDG config dir. A broken file is not fatal: defaults are used and `plugin list` says why.
   */
  config?: Config;
  /** The app's structured log (default: none). Plugin messages go to it too. */
  logger?: Logger;
  /** Idle session shells are closed after this long (overrides config `shell.idleMs`). */
  shellIdleMs?: number;
  /** Default per-command timeout (overrides config `exec.timeoutMs`). */
  defaultTimeoutMs?: number;
  /** Output kept per stream (overrides config `exec.maxOutputBytes`); the rest is dropped and flagged. */
  maxOutputBytes?: number;
  /**
   * Plugin backends: layered over the config's `plugins` (paths and disabled names add up, the rest
   * overrides). false: load no plugins at all.
   */
  plugins?: PluginSettingsInput | false;
  /** Where plugin messages go besides `plugin list` (default: `logger`). */
  pluginLogger?: PluginLogger;
  /** The app's log file the `app` log source reads (default: the one src/platform/paths.ts names for this home). */
  logFile?: string;
  /** The config file `pool set` writes (default: the one src/platform/paths.ts names for this home). */
  configPaths?: Pick<AppPaths, 'configFile' | 'legacyConfigFile'>;
}

/**
 * The core's one entry point: the CLI, the Electron main process, the browser mode and the agent
 * bridge all drive sandboxes through this class. A facade: validation and the order of steps live
 * here; live environments and incarnations are the EnvironmentManager's, a command's life is
 * `runCommand`'s, terminals and files are SessionIo's, the desktop is DesktopService's.
 */
export class SandboxDesk {
  readonly store: Store;
  readonly registry: ProviderRegistry;
  /** The bot desktops: start/stop/status, screen streams, agent actions, the browser endpoint. */
  readonly desktop: DesktopService;
  /** Sessions' terminals and files, anchored where each session stands. */
  readonly io: SessionIo;
  /** Connected environments per incarnation, and the store of everything tied to each. */
  readonly environments: EnvironmentManager;
  /** Docker and VM images: list, inspect, build and pull (as tasks), remove. */
  readonly images: ImageService;
  /** Checkpoints, restore, fork, pause/resume (issue 15): checkpoint-service.ts. */
  readonly checkpoints: CheckpointService;
  private readonly shells: ShellPool;
  /** One command at a time per session, in arrival order (see SessionTurns). */
  private readonly turns = new SessionTurns();
  /** The latest long operation (create/start/stop) per sandbox, for clients that poll its progress. */
  private readonly operations: SandboxOperations;
  private readonly defaultTimeoutMs: number;
  private readonly maxOutputBytes: number;
  private readonly plugins: PluginLoader;
  private pluginConfigError: string | null = null;
  /** The configuration in force (every default filled in). */
  readonly config: Config;
  /** Pushed state: every change a client should see without polling (src/shared/core-events.ts). */
  readonly events = new CoreEventBus();
  readonly log: Logger;
  /** Every log of a sandbox (backend, desktop, the app's own): list, read, follow. */
  readonly logs: LogService;
  /** CPU and memory per sandbox, the engine's state, and `stats` events while watched. */
  readonly stats: StatsService;
  /** Long operations of any kind, persisted and published (the window's task list). */
  readonly tracker: OperationTracker;
  /** How long listSandboxes waits for one backend before listing its sandboxes `unavailable`. */
  listDeadlineMs = 4000;
  private readonly pushed: Array<{ dispose(): void }> = [];
  /** Network policy per sandbox: the egress proxy, the backend's enforcement, the connection log. */
  readonly network: NetworkService;
  /** Replay (issue 16): recordings of screens, terminals and events, on one clock (replay-service.ts). */
  readonly replay: ReplayService;
  private readonly replayJournal: ReplayJournal;
  /** Warm pools (issue 37, src/pool/): claims here; refilling only where `pools.start()` is called (the service). */
  readonly pools: WarmPools;
  private poolsConfig: Config['pools'];
  private poolEngine: PoolEngine | null | undefined;
  /** The commands running now, so that the next process can report those a killed one left (running-commands.ts). */
  private readonly runningCommands: RunningCommands;

  constructor(opts: SandboxDeskOptions = {}) {
    this.store = Store.open(opts.dataDir ?? resolveDataDir());
    this.log = opts.logger ?? silentLogger;
    this.config = opts.config ?? this.readConfig(opts.dataDir);
    this.registry = opts.registry ?? builtinRegistry({ dataDir: this.store.dataDir });
    const pluginLog = this.log.child({ scope: 'plugins' });
    this.plugins = new PluginLoader(this.registry, this.store.dataDir, opts.plugins ?? {}, {
      fromConfig: settingsFromConfig(this.config.plugins),
      configError: this.pluginConfigError,
      logger: opts.pluginLogger ?? { info: (m) => pluginLog.info(m), warn: (m) => pluginLog.warn(m), debug: (m) => pluginLog.debug(m) },
    });
    this.environments = new EnvironmentManager({ sandboxes: this.store.sandboxes });
    this.tracker = new OperationTracker(this.store.operations, this.events, (err) =>
      this.log.warn({ err: String(err) }, 'an operation could not be persisted'),
    );
    this.operations = new SandboxOperations(
      (name, w) => this.environments.addWarning(name, w),
      (name, kind) => this.tracker.start(kind, name, name),
    );
    this.shells = new ShellPool({
      idleMs: opts.shellIdleMs ?? this.config.shell.idleMs,
      scopeOf: (env) => this.environments.scopeOf(env),
      // Kept out of every result; logged (info: the default level writes it), marked as late, so it is
      // not lost silently — a background job's stderr is often the one sign it failed.
      onLateOutput: (where, late) =>
        this.log.info(
          { ...where, stream: late.stream, bytes: late.bytes.length, text: late.bytes.toString('utf8').slice(0, 4096) },
          'late output: a background job of an earlier command printed after that command ended',
        ),
    });
    // A shell of an incarnation that changed behind the app's back is remembered (its next command says
    // so); one the app ended itself (stop, start, removal, a dropped transport) is forgotten.
    this.environments.onEnvironmentDisposed((e) => {
      if (e.reason !== 'changed') this.shells.closeFor(e.sandbox);
    });
    this.defaultTimeoutMs = opts.defaultTimeoutMs ?? this.config.exec.timeoutMs;
    this.maxOutputBytes = opts.maxOutputBytes ?? this.config.exec.maxOutputBytes;
    const recordingsDir = join(this.store.dataDir, 'recordings');
    this.replayJournal = new ReplayJournal(recordingsDir, () => this.config.replay.record);
    // Commands a killed process (a `kill -9` of the service) left running: interrupted events in the replay.
    this.runningCommands = new RunningCommands(recordingsDir);
    for (const { sandbox, event } of this.runningCommands.sweep()) this.replayJournal.append(sandbox, event);
    this.io = new SessionIo(this, {
      scrollbackBytes: this.config.terminal.scrollbackBytes,
      attach: new SessionAttach(this.shells, (m) => this.log.warn(m)),
      recording: {
        dir: recordingsDir,
        enabled: () => this.config.replay.record,
        onWarning: (sandbox, message) => this.replay.warn(sandbox, message),
        onChanged: (sandbox) => {
          this.events.publish({ topic: 'replay', sandbox });
          this.replay.enforceLimit(sandbox);
        },
      },
    });
    this.images = new ImageService({
      dataDir: this.store.dataDir,
      instanceId: this.store.instanceId,
      sandboxes: () => this.store.sandboxes.list(),
      docker: () => {
        const p = this.registry.has('docker') ? this.registry.get('docker') : null;
        return p instanceof DockerProvider ? p : null;
      },
      qemu: () => {
        const p = this.registry.has('qemu') ? this.registry.get('qemu') : null;
        return p instanceof QemuProvider ? p : null;
      },
    });
    this.checkpoints = new CheckpointService({
      store: this.store,
      environments: this.environments,
      operations: this.operations,
      events: this.events,
      log: this.log.child({ scope: 'checkpoints' }),
      providerOf: (b) => this.providerOf(b),
      record: (n) => this.record(n),
      info: (n) => this.info(this.record(n), false),
      keepNetworkPolicy: async (source, target, provider) => {
        this.network.inherit(source, target);
        await this.network.beforeStart(this.record(target), provider);
      },
      // No graceful desktop stop (as `stop` does): the disk it would tidy is replaced by the checkpoint's;
      // the desktop connection ends with the incarnation's scope.
      beforeReplace: async (n) => {
        this.shells.closeFor(n);
      },
      // The app's own measurement after a restore: not an agent's command, so not a replay event.
      remeasure: async (sandbox, session) => (await this.runExec({ sandbox, session, command: 'true', mode: 'oneshot' }, false)).warnings,
      // What ran before a restore or fork runs again after it (restore-restarts.ts).
      restarts: {
        desktopStatus: (n) => this.desktop.status(n),
        startDesktop: (n, o) => this.desktop.start(n, o),
        liveShells: (n) => this.shells.liveSessions(n),
        openShell: async (sandbox, session) => (await this.runExec({ sandbox, session, command: 'true', mode: 'shell' }, false)).warnings,
        holdTerminals: (n) => this.io.holdTerminals(n),
        reopenTerminals: (held) => this.io.reopenTerminals(held),
        releaseTerminals: (held) => this.io.releaseTerminals(held),
      },
    });
    this.desktop = new DesktopService({
      environment: async (name) => {
        const rec = this.record(name);
        return this.environments.environmentFor(rec, await this.providerOf(rec.backend), false);
      },
      provider: (name) => this.providerOf(this.record(name).backend),
      leases: this.store.leases,
      defaultGeometry: this.config.desktop.geometry,
      scopeOf: (env) => this.environments.scopeOf(env),
      actionsDir: join(this.store.dataDir, 'desktop-actions'),
      recordingsDir: join(this.store.dataDir, 'recordings'),
      record: this.config.replay.record,
      // A full disk stops the screen recording: a `recording` event in the replay, and a log line.
      onRecordingWarning: (sandbox, message) => {
        this.log.warn({ sandbox }, message);
        this.replay.warn(sandbox, message);
      },
      // The service was killed while it recorded: the stretch it missed is a `recording` event on the timeline.
      onRecordingGap: (sandbox, gap) => {
        this.log.warn({ sandbox, ...gap }, 'screen recording resumed after its recorder died');
        this.replay.markGap(sandbox, gap);
      },
      // The screen's size not remembered or not put back around a person's control: said in the app's log.
      onControlWarning: (sandbox, message) => this.log.warn({ sandbox }, message),
      accel: async (name) => vmAccel(await this.providerOf(this.record(name).backend), sandboxRef(this.record(name))),
    });
    const observed = async (name: string) => {
      const rec = this.record(name);
      return { ref: sandboxRef(rec), provider: await this.providerOf(rec.backend) };
    };
    this.logs = new LogService({
      target: observed,
      desktopLogs: (name) => this.desktop.logLocation(name),
      appLogFile: opts.logFile ?? (opts.dataDir ? homePaths(opts.dataDir) : resolvePaths()).logFile,
    });
    this.stats = new StatsService({
      target: observed,
      names: () => this.store.sandboxes.list().map((r) => r.name),
      engineInfo: async () => {
        const p = this.registry.has('docker') ? this.registry.get('docker') : null;
        return { docker: p instanceof DockerProvider ? await p.engineInfo() : null };
      },
      events: this.events,
    });
    this.network = new NetworkService({
      store: this.store,
      events: this.events,
      log: this.log.child({ scope: 'network' }),
      providerOf: (b) => this.providerOf(b),
      record: (n) => this.record(n),
      resourceName: (rec) => provisionSpec(rec, this.store.instanceId).resourceName,
      labels: (rec) => provisionSpec(rec, this.store.instanceId).labels,
      reconnect: (n) => this.environments.drop(n, 'restarting'),
    });
    if (Object.keys(this.store.networkPolicies.all()).length > 0) this.network.watch();
    this.replay = new ReplayService({
      root: recordingsDir,
      limitBytes: this.config.replay.maxBytesPerSandbox,
      screen: screenRecordings,
      journal: this.replayJournal,
      calls: (sandbox) => this.store.callLog.list({ sandbox, limit: 100_000 }),
      checkpoints: (sandbox) => this.store.checkpoints.listReady(sandbox),
      recordingTerminals: (sandbox) => this.io.recordingTerminals(sandbox),
      screenRecording: (sandbox) => this.desktop.screenRecordingStatus(sandbox)?.on ?? false,
      removeScreen: (sandbox) => this.desktop.removeScreenRecording(sandbox),
      screenWarning: (sandbox) => this.desktop.screenRecordingStatus(sandbox)?.warning ?? null,
      startOperation: (kind, sandbox) => this.tracker.start(kind, sandbox, sandbox),
      operations: (sandbox) => this.tracker.list(200).filter((o) => o.sandbox === sandbox),
      changed: (sandbox) => this.events.publish({ topic: 'replay', sandbox }),
    });
    this.poolsConfig = this.config.pools;
    const configPaths = opts.configPaths ?? (opts.dataDir ? homePaths(opts.dataDir) : resolvePaths());
    this.pools = new WarmPools({
      store: this.store,
      engine: () => {
        if (this.poolEngine === undefined) {
          const p = this.registry.has('docker') ? this.registry.get('docker') : null;
          this.poolEngine = p instanceof DockerProvider ? new DockerPoolEngine(p.endpoint) : null;
        }
        return this.poolEngine;
      },
      provider: () => this.providerOf('docker'),
      specOf: (rec) => provisionSpec(rec, this.store.instanceId),
      environments: this.environments,
      shells: {
        open: async (env) => {
          const { shell, openedWith } = await openShellAhead(env);
          return {
            handTo: (n, claimed) => this.shells.adopt(n, DEFAULT_SESSION, claimed.user ?? undefined, claimed, shell, openedWith),
            close: () => shell.close(),
          };
        },
      },
      desktop: {
        start: (n) => this.desktop.startPooled(n),
        handedOver: (member, n, env, ahead) => this.desktop.handedOver(member, n, env, ahead),
        openAhead: (member) => this.desktop.openAhead(member),
        adopt: (n) => this.desktop.start(n),
      },
      applyNetwork: async (n, policy) => {
        await this.network.change(n, { mode: policy.mode, allow: policy.allow }, true);
      },
      config: () => this.poolsConfig,
      saveTemplates: (templates) => {
        const next = withKey(loadConfig(configPaths).raw, 'pools.templates', templates);
        writeConfigFile(configPaths.configFile, next.raw);
        this.poolsConfig = next.config.pools;
        return this.poolsConfig;
      },
      log: this.log.child({ scope: 'pools' }),
      changed: () => this.events.publish({ topic: 'pool' }),
    });
    this.wirePushedState();
  }

  /** Every source of pushed state onto `events` (see docs/architecture.md, "Pushed state"). */
  private wirePushedState(): void {
    const onError = (err: unknown) => this.log.warn({ err: String(err) }, 'pushed state');
    this.pushed.push(
      publishStoreChanges(this.store.changes, this.events),
      new EventRelay({ bus: this.events, journal: this.store.journal, onError }),
      new EngineWatch({
        bus: this.events,
        providers: async () => {
          await this.plugins.ready;
          return this.registry.all();
        },
        labels: { 'io.sandbox-desk.instance': this.store.instanceId },
        sandboxOf: (backend, ref, labelled) => {
          const recs = this.store.sandboxes.list().filter((r) => r.backend === backend);
          return (recs.find((r) => r.name === labelled) ?? recs.find((r) => r.backendRef !== null && r.backendRef === ref))?.name ?? null;
        },
        sandboxesOf: (backend) =>
          this.store.sandboxes
            .list()
            .filter((r) => r.backend === backend)
            .map((r) => r.name),
      }),
      trackImageTasks(this.images.tasks, this.tracker),
      new PluginStatusWatch({
        bus: this.events,
        statuses: async () => (await this.plugins.list()).map((p) => ({ name: p.name, status: p.status, error: p.error })),
      }),
    );
    this.pushed.push(publishDesktopChanges(this.desktop, this.events, this.tracker));
    this.pushed.push(
      wireReplay({
        bus: this.events,
        journal: this.replayJournal,
        replay: this.replay,
        onLeaseChanged: this.store.leases.onChanged,
        onActionRecorded: this.desktop.onActionRecorded,
        onActionRefused: this.desktop.onActionRefused,
        // The screen recorder says when a screen recording starts, stops or is cut.
        onRecordingChanged: this.desktop.onRecordingChanged,
      }),
    );
  }

  /** Recent long operations of every process on this data dir, the newest first. */
  listOperations(limit?: number): OperationView[] {
    return this.tracker.list(limit);
  }

  /** The config file of this core's home; a broken one is reported by `plugin list` and defaults are used. */
  private readConfig(dataDir: string | undefined): Config {
    try {
      return loadConfig(dataDir ? homePaths(dataDir) : resolvePaths(), (m) => this.log.warn(m)).config;
    } catch (err) {
      // A broken config.json must not stop the app: its settings are skipped and `plugin list` says why.
      this.pluginConfigError = err instanceof SandboxDeskError ? err.oneLine() : String(err);
      this.log.error({ err: this.pluginConfigError }, 'config not usable; running with the defaults');
      return DEFAULT_CONFIG;
    }
  }

  /** The names `plugins.disabled` left out of loading (`plugin list` mentions them). */
  disabledPlugins(): string[] {
    return this.plugins.disabled();
  }

  /** Waits until plugin loading has settled (it never fails); the backend list is complete afterwards. */
  pluginsLoaded(): Promise<void> {
    return this.plugins.ready;
  }

  /** Every plugin found, loaded or not, with its backends, isolation, status and error. */
  listPlugins(): Promise<PluginReport[]> {
    return this.plugins.list();
  }

  private providerOf(name: string): Promise<SandboxProvider> {
    return this.plugins.providerOf(name);
  }

  /** The store of the incarnation `env` belongs to (see EnvironmentManager.scopeOf). */
  scopeOf(env: SandboxEnvironment): DisposableStore | null {
    return this.environments.scopeOf(env);
  }

  // ---- sandboxes ------------------------------------------------------------------------------

  async createSandbox(input: CreateSandboxRequest, opts: OperationOptions = {}): Promise<CreateSandboxResult> {
    const req = validate(CreateSandboxRequest, input);
    const provider = await this.providerOf(req.backend);
    if (this.store.sandboxes.get(req.name)) {
      throw new SandboxDeskError('name_taken', `a sandbox named ${req.name} already exists`, {
        hint: 'choose another name, or remove the old one with `sandbox-desk sandbox rm`',
      });
    }
    const warnings: ExecWarning[] = [];
    const declared = this.environments.declareDefaultCwd(provider, req.defaultCwd, warnings);
    const networkPolicy = this.network.initial(provider, req.network, req.allow);
    // A ready sandbox of a warm pool when one has exactly this template (src/pool/); else why not.
    const claim = await this.pools.claim({
      ask: { ...req, backend: provider.name },
      name: req.name,
      declaredDefaultCwd: declared,
      typedDefaultCwd: req.defaultCwd ?? null,
      user: req.user ?? null,
      network: networkPolicy,
    });
    if (claim.warm) {
      this.events.publish({ topic: 'sandbox', sandbox: req.name, reason: 'created' });
      // The claim matched exactly the template this create asks for: its description names the pool.
      const asked = askedTemplate({ ...req, backend: provider.name });
      return {
        sandbox: await this.inspectSandbox(req.name),
        warnings: [...warnings, ...this.environments.takeWarnings(req.name)],
        warm: true,
        ...('template' in asked ? { warmPool: describeTemplate(asked.template) } : {}),
      };
    }
    const record = newSandboxRecord({ ...req, backend: provider.name, declaredDefaultCwd: declared });
    // The row reserves the name first; if provisioning fails — or the create is cancelled at any step,
    // the boot included — what was made is removed again, so nothing half-made stays.
    this.store.sandboxes.insert(record);
    this.network.remember(req.name, networkPolicy);
    let provisioned = false;
    try {
      await this.operations.run(
        req.name,
        'create',
        opts.onProgress,
        async (op) => {
          const made = await provider.provision(provisionSpec(record, this.store.instanceId), op);
          this.store.sandboxes.setProvisioned(req.name, made);
          provisioned = true;
          // One operation from the first step to ready: a cancel during the boot undoes the create too.
          if (req.start) {
            await this.boot(this.record(req.name), provider, op, true);
            if (provider instanceof QemuProvider) await this.takeUpTemplateDesktop(this.record(req.name), provider, op);
          }
        },
        opts.signal,
      );
    } catch (err) {
      if (!provisioned || isCancelled(err)) await this.discard(req.name, provider);
      this.events.publish({ topic: 'sandbox', sandbox: req.name, reason: 'create failed' });
      throw err;
    }
    this.events.publish({ topic: 'sandbox', sandbox: req.name, reason: 'created' });
    return {
      sandbox: await this.inspectSandbox(req.name),
      warnings: [...warnings, ...this.environments.takeWarnings(req.name)],
      warm: false,
      warmReason: claim.reason,
    };
  }

  /** A VM restored from a desktop template has its desktop running: handed over here (template-desktop-takeup.ts). */
  private async takeUpTemplateDesktop(rec: SandboxRecord, provider: QemuProvider, op: LifecycleContext): Promise<void> {
    const ref = sandboxRef(rec);
    const d = provider.restoredDesktop(ref);
    if (!d) return;
    const env = await this.environments.connect(rec, provider);
    await takeUpTemplateDesktop(env, d, rec.name, {
      runAsDesktop: execRun(env, { user: d.user ?? undefined, timeoutMs: 120_000 }),
      openAhead: (socket, user) => this.desktop.openRestoredAhead(env, socket, user),
      restoredRunning: (user, ahead) => this.desktop.restoredRunning(rec.name, env, user, ahead),
      noteTaken: (taken) => provider.noteDesktopTaken(ref, taken),
      say: op.progress ?? (() => undefined),
    });
  }

  /** Starts a sandbox and connects to it, inside an operation (its progress and its signal). */
  private async boot(rec: SandboxRecord, provider: SandboxProvider, op: LifecycleContext, created = false): Promise<void> {
    await this.network.beforeStart(rec, provider);
    await provider.start(sandboxRef(rec), op);
    op.signal?.throwIfAborted();
    this.environments.drop(rec.name, 'restarting');
    if (created && provider instanceof DockerProvider) await this.connectWithShell(rec, provider);
    else await this.environments.connect(rec, provider);
  }

  /**
   * A new container's default session shell, opened while its home is measured: both start a process
   * in the container, and one after the other they were most of what a cold create's first command
   * cost beyond `docker run` (bench/warm.ts). The shell needs only the exec prefix, so it starts from an
   * environment whose home is not measured yet ('/' stands in; nothing reads it); the session takes it
   * only when the measured environment starts shells exactly the same way (ShellPool.adopt).
   */
  private async connectWithShell(rec: SandboxRecord, provider: DockerProvider): Promise<void> {
    const ref = sandboxRef(rec);
    const early = provider
      .status(ref)
      .then(async (st) => {
        if (st.state !== 'running' || !st.incarnation) return null;
        return openShellAhead(
          await provider.createEnvironment({ cwd: '/', sandbox: ref, cachedHome: { home: '/', incarnation: st.incarnation } }),
        );
      })
      // Not opened: the first command opens it, as without this.
      .catch(() => null);
    let env: SandboxEnvironment;
    try {
      env = await this.environments.connect(rec, provider);
    } catch (err) {
      void early.then((s) => s?.shell.close());
      throw err;
    }
    const s = await early;
    if (s && !this.shells.adopt(rec.name, DEFAULT_SESSION, env.user ?? undefined, env, s.shell, s.openedWith)) s.shell.close();
  }

  /** Removes whatever a cancelled or failed create made (container, VM directory and process, the row). */
  private async discard(name: string, provider: SandboxProvider): Promise<void> {
    const rec = this.store.sandboxes.get(name);
    this.environments.forget(name);
    if (rec?.backendRef) {
      await provider.remove(sandboxRef(rec), { force: true }).catch((err: unknown) => {
        this.log.warn({ err: String(err), sandbox: name }, 'could not remove what a cancelled create made');
      });
    }
    if (rec) await this.network.onRemove(rec, provider);
    this.store.sandboxes.delete(name);
  }

  private record(name: string): SandboxRecord {
    validate(SandboxName, name);
    const found = this.store.sandboxes.get(name);
    // A pooled sandbox is nobody's until claimed: only the pool's own work (a fill's desktop start) reaches it.
    const rec = found && this.store.pools.isMember(name) && !this.pools.isBusy(name) ? undefined : found;
    if (!rec) {
      const guess = didYouMean(
        name,
        this.store.sandboxes.list().map((r) => r.name),
      );
      throw new SandboxDeskError('not_found', `no sandbox named ${name}`, {
        hint: guess ? `${guess} (see \`sandbox-desk sandbox list\`)` : 'see `sandbox-desk sandbox list`',
      });
    }
    return rec;
  }

  /**
   * Every sandbox; one whose backend cannot answer is listed as `unavailable`, never hides the others,
   * and one that does not answer within `listDeadlineMs` does not hold them up: it is listed
   * `unavailable` now, and a `sandbox` event follows when its answer comes.
   */
  async listSandboxes(): Promise<SandboxInfo[]> {
    return Promise.all(
      this.store.sandboxes.list().map((rec) =>
        withDeadline(this.info(rec, false), this.listDeadlineMs, () =>
          this.events.publish({ topic: 'sandbox', sandbox: rec.name, reason: 'backend answered late' }),
        ).catch((err: unknown) => ({
          ...unavailableInfo(rec, this.registry.has(rec.backend) ? this.registry.get(rec.backend) : null, err),
          network: this.network.policy(rec.name),
        })),
      ),
    );
  }

  /** Current state from the backend; a running sandbox is connected so its home is known. */
  async inspectSandbox(name: string): Promise<SandboxInfo> {
    return this.info(this.record(name), true);
  }

  private async info(rec: SandboxRecord, connect: boolean): Promise<SandboxInfo> {
    const provider = await this.providerOf(rec.backend);
    const status = await provider.status(sandboxRef(rec));
    this.environments.observe(rec.name, status);
    let env = this.environments.cached(rec.name) ?? null;
    if (!env && connect && status.state === 'running') env = await this.environments.connect(rec, provider);
    const fresh = this.store.sandboxes.get(rec.name) ?? rec;
    return {
      ...sandboxInfo(
        fresh,
        provider,
        status,
        env,
        this.environments.effectiveDeclaredCwd(fresh, provider).value,
        this.operations.running(rec.name),
      ),
      network: this.network.policy(rec.name),
    };
  }

  async startSandbox(name: string, opts: OperationOptions = {}): Promise<SandboxInfo> {
    const rec = this.record(name);
    const provider = await this.providerOf(rec.backend);
    try {
      await this.operations.run(name, 'start', opts.onProgress, (op) => this.boot(rec, provider, op), opts.signal);
    } catch (err) {
      // A cancelled start leaves the sandbox as it was: stopped (a VM's boot was already stopped hard).
      if (isCancelled(err)) {
        this.environments.drop(name, 'stopped');
        await provider.stop(sandboxRef(rec)).catch(() => undefined);
      }
      this.events.publish({ topic: 'sandbox', sandbox: name, reason: 'start failed' });
      throw err;
    }
    this.events.publish({ topic: 'sandbox', sandbox: name, reason: 'started' });
    return this.info(this.record(name), false);
  }

  async stopSandbox(name: string, opts: OperationOptions = {}): Promise<SandboxInfo> {
    const rec = this.record(name);
    const provider = await this.providerOf(rec.backend);
    // A running desktop is stopped first, while the sandbox still runs, so that its Chromium quits on
    // its own and the next start does not greet the user with "Restore pages?". Best effort: a desktop
    // that cannot be asked must not keep the sandbox from stopping.
    if (provider.supportsStreams) {
      await this.desktop.stopIfRunning(name).catch((err: unknown) => {
        this.log.debug({ sandbox: name, err: err instanceof Error ? err.message : String(err) }, 'desktop not stopped before the sandbox');
      });
    }
    this.environments.drop(name, 'stopped');
    try {
      await this.operations.run(name, 'stop', opts.onProgress, (op) => provider.stop(sandboxRef(rec), op));
      await this.network.afterStop(rec, provider);
    } finally {
      this.events.publish({ topic: 'sandbox', sandbox: name, reason: 'stopped' });
    }
    return this.info(rec, false);
  }

  /** The latest create/start/stop of a sandbox with its progress so far; null when there was none. */
  sandboxProgress(name: string): SandboxOperation | null {
    validate(SandboxName, name);
    return this.operations.get(name);
  }

  /** Cancels a running create (it then leaves nothing behind) or start (the sandbox stays stopped). */
  cancelOperation(name: string): SandboxOperation {
    validate(SandboxName, name);
    return this.operations.cancel(name);
  }

  async removeSandbox(name: string, opts: { force?: boolean } = {}): Promise<void> {
    const { force } = validate(RemoveSandboxRequest, { name, force: opts.force });
    const rec = this.record(name);
    const provider = await this.providerOf(rec.backend);
    const status = await provider.status(sandboxRef(rec));
    if (status.state === 'running' && rec.backendRef !== null && !force) {
      throw new SandboxDeskError('refused', `sandbox ${name} is running`, {
        hint: `stop it first (\`sandbox-desk sandbox stop ${name}\`) or pass --force`,
      });
    }
    this.environments.forget(name);
    await provider.remove(sandboxRef(rec), { force: Boolean(force) });
    await this.network.onRemove(rec, provider);
    this.store.sandboxes.delete(name);
    this.events.publish({ topic: 'sandbox', sandbox: name, reason: 'removed' });
  }

  /** `sandbox network`: changes (or, with no change, reads) the policy; live when the sandbox runs. */
  async sandboxNetwork(name: string, change: NetworkChange = {}): Promise<NetworkPolicy> {
    const rec = this.record(name);
    if (change.mode === undefined && !change.allow?.length && !change.deny?.length) return this.network.policy(name);
    const provider = await this.providerOf(rec.backend);
    const running = (await provider.status(sandboxRef(rec))).state === 'running';
    return this.network.change(name, change, running);
  }

  // ---- commands -------------------------------------------------------------------------------

  async exec(input: ExecRequest & { signal?: AbortSignal }): Promise<ExecOutcome> {
    return this.runExec(input, true);
  }

  /**
   * A command; `journal`: it is an event of the replay (someone asked for it). What the app runs for
   * itself (a restore's re-measurement) passes false — a flag no API caller can set, so an agent's
   * command can never hide from the replay.
   */
  private async runExec(input: ExecRequest & { signal?: AbortSignal }, journal: boolean): Promise<ExecOutcome> {
    const req = validate(ExecRequest, input);
    const rec = this.record(req.sandbox);
    const session = req.session ?? DEFAULT_SESSION;
    const timeoutMs = req.timeoutSeconds !== undefined ? req.timeoutSeconds * 1000 : this.defaultTimeoutMs;
    // The call's place in its session's line is taken now, before any await: arrival order.
    const turn = this.turns.enter(rec.name, session, { timeoutMs, signal: input.signal });
    try {
      return await this.execInTurn(req, rec, session, timeoutMs, turn, input.signal, journal);
    } finally {
      turn.release();
    }
  }

  private async execInTurn(
    req: z.output<typeof ExecRequest>,
    rec: SandboxRecord,
    session: string,
    timeoutMs: number,
    turn: SessionTurn,
    signal: AbortSignal | undefined,
    journal: boolean,
  ): Promise<ExecOutcome> {
    const provider = await this.providerOf(rec.backend);
    const user = req.user ?? undefined;
    const envs = this.environments;
    const fast = req.mode === 'shell' && this.shells.hasLive(rec.name, session, user ?? envs.cached(rec.name)?.user ?? undefined);
    const env = await envs.environmentFor(rec, provider, fast);
    const ctx = commandContext({ rec, provider, env, environments: envs, store: this.store, shells: this.shells });
    const started = new Date();
    const startedAt = started.toISOString();
    const ended = journal ? this.runningCommands.begin({ sandbox: rec.name, session, command: req.command, startedAt }) : () => undefined;
    try {
      const out = await runCommand(ctx, {
        command: req.command,
        session: req.session,
        parent: req.parent,
        workdir: req.workdir,
        stepId: req.stepId,
        timeoutMs,
        mode: req.mode,
        user: req.user,
        signal,
        maxOutputBytes: req.maxOutputBytes ?? this.maxOutputBytes,
        turn,
      });
      if (journal) this.replayJournal.append(rec.name, commandEvent(startedAt, req.command, out));
      // The call log's link to the connections this command made (issue 17).
      this.network.noteCommand(rec.name, out, started);
      return out;
    } catch (err) {
      if (journal)
        this.replayJournal.append(
          rec.name,
          commandEvent(startedAt, req.command, { error: String((err as Error)?.message ?? err), session }),
        );
      // A transport failure usually means the sandbox went away under us: say that, precisely.
      if (err instanceof SandboxDeskError && err.code === 'backend_unavailable') {
        envs.drop(rec.name, 'transport');
        await envs.environmentFor(rec, provider, false);
      }
      throw err;
    } finally {
      ended();
    }
  }

  /**
   * Where a session stands, by the same policy commands use (its record, guarded, else the default;
   * a step with neither fails closed), with the live environment it stands in.
   */
  async sessionPlan(sandbox: string, session: string | undefined, stepId?: string): Promise<SessionPlan> {
    const rec = this.record(sandbox);
    const provider = await this.providerOf(rec.backend);
    const env = await this.environments.environmentFor(rec, provider, false);
    const key = session === undefined ? DEFAULT_SESSION : validate(SessionKey, session);
    const declared = this.environments.declaredAfterConnect(rec, provider).value;
    return planSession({
      rec,
      env,
      key,
      existing: this.store.sessions.get(rec.name, key),
      isContainer: provider.isContainer,
      hostHome: this.environments.hostHome,
      declared,
      stepId,
    });
  }

  // ---- sessions -------------------------------------------------------------------------------

  /** Creates a session, optionally as a child of another (it inherits the parent's cwd once, now). */
  createSession(input: CreateSessionRequest): SessionInfo {
    const req = validate(CreateSessionRequest, input);
    this.record(req.sandbox);
    return toSessionInfo(createChildSession(this.store.sessions, req));
  }

  listSessions(sandbox: string): SessionInfo[] {
    this.record(sandbox);
    return this.store.sessions.list(sandbox).map(toSessionInfo);
  }

  removeSession(sandbox: string, key: string): void {
    this.record(sandbox);
    validate(SessionKey, key);
    if (!this.store.sessions.delete(sandbox, key))
      throw new SandboxDeskError('not_found', `no session ${JSON.stringify(key)} in sandbox ${sandbox}`);
    this.shells.closeFor(sandbox, key);
  }

  /** Closes terminals, forwards, shells, backends and the database; the process can exit afterwards. */
  async close(): Promise<void> {
    await this.pools.dispose();
    this.io.closeAll();
    this.images.dispose();
    this.stats.dispose();
    await this.desktop.close();
    this.shells.closeAll();
    this.environments.dispose();
    for (const d of this.pushed.splice(0)) d.dispose();
    this.network.dispose();
    this.events.dispose();
    await this.plugins.dispose();
    this.store.close();
  }
}

export interface OperationOptions {
  /** Called with each progress event of the operation, as it happens. */
  onProgress?: (event: ProgressEvent) => void;
  /** Aborting it cancels the operation like `cancelOperation` does (the CLI's Ctrl-C). */
  signal?: AbortSignal;
}

/**
 * A default-session shell opened before its session exists (a pooled sandbox, a cold create's connect),
 * with the prefix it was started with: ShellPool.adopt takes it only if the session would start it the same way.
 */
async function openShellAhead(env: SandboxEnvironment): Promise<{ shell: SessionShell; openedWith: string[] }> {
  const user = env.user ?? undefined;
  return { shell: await SessionShell.open(env, user), openedWith: env.execPrefix({ user, interactive: false }) ?? [] };
}
