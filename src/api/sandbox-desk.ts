import { homedir } from 'node:os';
import { join, sep } from 'node:path';
import { normalizeDeclaredCwd, readProviderDefaultCwd } from '../cwd/declared-default-cwd.js';
import { DesktopService } from '../desktop/desktop-service.js';
import { SandboxDeskError } from '../shared/errors.js';
import { projectRoot } from '../platform/project-root.js';
import type { ExecWarning } from '../shared/exec-result.js';
import { runCommand, type ExecOutcome } from '../session/run-command.js';
import { resolveCommandCwd } from '../cwd/resolve-command-cwd.js';
import { ShellPool } from '../exec/shell-pool.js';
import type { ProgressEvent, SandboxEnvironment, SandboxProvider, SandboxRef } from '../sandbox/provider.js';
import type { ProviderRegistry } from '../sandbox/registry.js';
import { PluginManager, type PluginReport } from '../sandbox/plugins/plugin-manager.js';
import { mergeSettings, settingsFromConfig, type PluginSettingsInput } from '../sandbox/plugins/plugin-settings.js';
import type { PluginLogger } from '../sandbox/plugin-api.js';
import { resolveDataDir } from '../platform/data-dir.js';
import { DEFAULT_CONFIG, loadConfig, type Config } from '../platform/config.js';
import { silentLogger, type Logger } from '../platform/log.js';
import { homePaths, resolvePaths } from '../platform/paths.js';
import type { SandboxRecord } from '../store/sandbox-store.js';
import { DEFAULT_SESSION, type SessionRecord } from '../store/session-store.js';
import { Store } from '../store/store.js';
import { builtinRegistry } from './builtin-providers.js';
import { SandboxOperations } from './sandbox-operations.js';
import { SessionIo } from '../session/session-io.js';
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
}

/**
 * The core's one entry point: the CLI, the Electron main process, the browser mode and the agent
 * bridge all drive sandboxes through this class.
 */
export class SandboxDesk {
  readonly store: Store;
  readonly registry: ProviderRegistry;
  /** The bot desktops: start/stop/status, screen streams, agent actions, the browser endpoint. */
  readonly desktop: DesktopService;
  /** Sessions' terminals and files, anchored where each session stands. */
  readonly io: SessionIo;
  private readonly shells: ShellPool;
  private readonly environments = new Map<string, SandboxEnvironment>();
  /** Warnings found while connecting, delivered with the next result that concerns the sandbox. */
  private readonly pendingWarnings = new Map<string, ExecWarning[]>();
  /** The latest long operation (create/start/stop) per sandbox, for clients that poll its progress. */
  private readonly operations = new SandboxOperations((name, w) =>
    this.pendingWarnings.set(name, [...(this.pendingWarnings.get(name) ?? []), w]),
  );
  private readonly hostHome = homedir();
  private readonly defaultTimeoutMs: number;
  private readonly maxOutputBytes: number;
  private readonly plugins: PluginManager | null;
  /** Settles once every plugin has loaded or failed; never rejects. */
  private readonly pluginsReady: Promise<void>;
  private pluginConfigError: string | null = null;
  /** The configuration in force (every default filled in). */
  readonly config: Config;
  readonly log: Logger;

  constructor(opts: SandboxDeskOptions = {}) {
    this.store = Store.open(opts.dataDir ?? resolveDataDir());
    this.log = opts.logger ?? silentLogger;
    this.config = opts.config ?? this.readConfig(opts.dataDir);
    this.registry = opts.registry ?? builtinRegistry({ dataDir: this.store.dataDir });
    this.plugins = opts.plugins === false ? null : this.pluginManager(opts.plugins ?? {}, opts.pluginLogger);
    // Plugins load in the background: a slow or broken one never blocks the app from opening.
    this.pluginsReady = this.plugins
      ? this.plugins.loadAll().then(
          () => undefined,
          () => undefined,
        )
      : Promise.resolve();
    this.shells = new ShellPool({ idleMs: opts.shellIdleMs ?? this.config.shell.idleMs });
    this.defaultTimeoutMs = opts.defaultTimeoutMs ?? this.config.exec.timeoutMs;
    this.maxOutputBytes = opts.maxOutputBytes ?? this.config.exec.maxOutputBytes;
    this.io = new SessionIo(this);
    this.desktop = new DesktopService({
      environment: async (name) => {
        const rec = this.record(name);
        return this.environmentFor(rec, await this.providerOf(rec.backend), false);
      },
      provider: (name) => this.providerOf(this.record(name).backend),
      leases: this.store.leases,
      defaultGeometry: this.config.desktop.geometry,
      actionsDir: join(this.store.dataDir, 'desktop-actions'),
    });
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

  // ---- plugins --------------------------------------------------------------------------------

  private pluginManager(input: PluginSettingsInput, logger?: PluginLogger): PluginManager {
    const log = this.log.child({ scope: 'plugins' });
    const toLog: PluginLogger = logger ?? { info: (m) => log.info(m), warn: (m) => log.warn(m) };
    return new PluginManager({
      registry: this.registry,
      dataDir: this.store.dataDir,
      settings: mergeSettings(settingsFromConfig(this.config.plugins), input),
      logger: toLog,
    });
  }

  /** The names `plugins.disabled` left out of loading (`plugin list` mentions them). */
  disabledPlugins(): string[] {
    return this.plugins?.disabled() ?? [];
  }

  /** Waits until plugin loading has settled (it never fails); the backend list is complete afterwards. */
  pluginsLoaded(): Promise<void> {
    return this.pluginsReady;
  }

  /** Every plugin found, loaded or not, with its backends, isolation, status and error. */
  async listPlugins(): Promise<PluginReport[]> {
    await this.pluginsReady;
    const list = this.plugins?.list() ?? [];
    if (this.pluginConfigError) {
      list.unshift({
        name: 'config.json',
        version: null,
        path: this.store.dataDir,
        source: 'config',
        isolation: 'in-process',
        status: 'failed',
        providers: [],
        error: this.pluginConfigError,
        warnings: [],
      });
    }
    return list;
  }

  /** A backend by name, once plugins have loaded; an unknown name points at a plugin that failed. */
  private async providerOf(name: string): Promise<SandboxProvider> {
    await this.pluginsReady;
    if (!this.registry.has(name)) {
      const failed = (this.plugins?.list() ?? []).filter((p) => p.status !== 'loaded');
      if (failed.length) {
        throw new SandboxDeskError(
          'unknown_backend',
          `Unknown backend '${name}'; plugin${failed.length === 1 ? '' : 's'} ${failed.map((p) => p.name).join(', ')} did not load`,
          {
            hint: 'see `sandbox-desk plugin list` for why',
          },
        );
      }
    }
    return this.registry.get(name);
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
    const declared = this.declareDefaultCwd(provider, req.defaultCwd, warnings);
    const record: SandboxRecord = {
      name: req.name,
      backend: provider.name,
      image: req.image ?? null,
      user: req.user ?? null,
      declaredDefaultCwd: declared,
      backendRef: null,
      mounts: req.mounts,
      env: req.env,
      options: req.options,
      createdAt: new Date().toISOString(),
      home: null,
      homeIncarnation: null,
      lastObservedCwd: null,
      lastObservedAt: null,
    };
    // The row reserves the name first; if provisioning fails it is removed again, so nothing half-made stays.
    this.store.sandboxes.insert(record);
    try {
      const made = await this.operations.run(req.name, 'create', opts.onProgress, (op) =>
        provider.provision(
          {
            name: req.name,
            image: record.image,
            user: record.user,
            mounts: record.mounts,
            env: record.env,
            options: record.options,
            labels: {
              'io.sandbox-desk.managed': 'true',
              'io.sandbox-desk.sandbox': req.name,
              'io.sandbox-desk.instance': this.store.instanceId,
            },
            resourceName: `sdesk-${this.store.instanceId}-${req.name}`,
          },
          op,
        ),
      );
      this.store.sandboxes.setProvisioned(req.name, made);
    } catch (err) {
      this.store.sandboxes.delete(req.name);
      throw err;
    }
    if (req.start) await this.startSandbox(req.name, opts);
    return { sandbox: await this.inspectSandbox(req.name), warnings: [...warnings, ...this.takePendingWarnings(req.name)] };
  }

  /**
   * What the sandbox declares as its default cwd, stored at creation: the user's `--default-cwd` when
   * usable, else the backend's declaration (null: read the backend's at connect time), and for the
   * local backend the directory the user is in — unless that is the app's own install directory.
   */
  private declareDefaultCwd(provider: SandboxProvider, asked: string | undefined, warnings: ExecWarning[]): string | null {
    const fallback = provider.isContainer ? 'the backend default' : 'the current directory';
    if (asked !== undefined) {
      const d = normalizeDeclaredCwd(asked, {
        isContainer: provider.isContainer,
        hostHome: this.hostHome,
        origin: '--default-cwd',
        fallback,
      });
      if (d.warning) warnings.push(d.warning);
      if (d.value) return d.value;
    }
    if (provider.isContainer) return null;
    // Never the app's own install directory: that is not a project the user chose.
    const here = process.cwd();
    const app = projectRoot();
    return here === app || here.startsWith(app + sep) ? '~' : here;
  }

  /** The declaration in effect, read after connecting: a connect may have dropped one that was a host path. */
  private declaredAfterConnect(rec: SandboxRecord, provider: SandboxProvider): { value: string; warning?: ExecWarning } {
    return this.effectiveDeclaredCwd(this.store.sandboxes.get(rec.name) ?? rec, provider);
  }

  /** The declared default cwd in effect: the sandbox's own, else the backend's (read now, defensively). */
  private effectiveDeclaredCwd(rec: SandboxRecord, provider: SandboxProvider): { value: string; warning?: ExecWarning } {
    if (rec.declaredDefaultCwd) return { value: rec.declaredDefaultCwd };
    const read = readProviderDefaultCwd(provider);
    const d = normalizeDeclaredCwd(read.raw, {
      isContainer: provider.isContainer,
      hostHome: this.hostHome,
      origin: `backend ${provider.name} defaultCwd`,
      fallback: '"~"',
    });
    if (read.error) return { value: '~', warning: { code: 'default_cwd_ignored', message: `${read.error}; using "~"` } };
    return d.warning ? { value: '~', warning: d.warning } : { value: d.value ?? '~' };
  }

  private record(name: string): SandboxRecord {
    validate(SandboxName, name);
    const rec = this.store.sandboxes.get(name);
    if (!rec) throw new SandboxDeskError('not_found', `no sandbox named ${name}`, { hint: 'see `sandbox-desk sandbox list`' });
    return rec;
  }

  private static ref(rec: SandboxRecord): SandboxRef {
    return {
      name: rec.name,
      backendRef: rec.backendRef,
      image: rec.image,
      user: rec.user,
      mounts: rec.mounts,
      env: rec.env,
      options: rec.options,
    };
  }

  /** Every sandbox; one whose backend cannot answer is listed as `unavailable`, never hides the others. */
  async listSandboxes(): Promise<SandboxInfo[]> {
    return Promise.all(
      this.store.sandboxes.list().map((rec) => this.info(rec, false).catch((err: unknown) => this.unavailableInfo(rec, err))),
    );
  }

  private unavailableInfo(rec: SandboxRecord, err: unknown): SandboxInfo {
    const why = err instanceof SandboxDeskError ? err.oneLine() : err instanceof Error ? err.message : String(err);
    const provider = this.registry.has(rec.backend) ? this.registry.get(rec.backend) : null;
    return {
      name: rec.name,
      backend: rec.backend,
      state: 'unavailable',
      stateDetail: why,
      image: rec.image,
      user: rec.user,
      declaredDefaultCwd: rec.declaredDefaultCwd ?? '~',
      defaultCwd: null,
      home: null,
      tempDir: null,
      supportsStreams: provider?.supportsStreams === true,
      isContainer: provider?.isContainer !== false,
      lastObservedCwd: rec.lastObservedCwd,
      backendRef: rec.backendRef,
      createdAt: rec.createdAt,
      details: null,
    };
  }

  /** Current state from the backend; a running sandbox is connected so its home is known. */
  async inspectSandbox(name: string): Promise<SandboxInfo> {
    return this.info(this.record(name), true);
  }

  private async info(rec: SandboxRecord, connect: boolean): Promise<SandboxInfo> {
    const provider = await this.providerOf(rec.backend);
    const status = await provider.status(SandboxDesk.ref(rec));
    if (status.state !== 'running' || (this.environments.get(rec.name)?.incarnation ?? status.incarnation) !== status.incarnation) {
      this.dropEnvironment(rec.name);
    }
    let env = this.environments.get(rec.name) ?? null;
    if (!env && connect && status.state === 'running') env = await this.connect(rec, provider);
    const fresh = this.store.sandboxes.get(rec.name) ?? rec;
    return {
      name: fresh.name,
      backend: fresh.backend,
      state: status.state,
      stateDetail: status.detail ?? null,
      image: fresh.image,
      user: fresh.user,
      declaredDefaultCwd: this.effectiveDeclaredCwd(fresh, provider).value,
      defaultCwd: env?.defaultCwd ?? null,
      home: env?.home ?? (status.state === 'running' && fresh.homeIncarnation === status.incarnation ? fresh.home : null),
      tempDir: env?.getTempDir() ?? null,
      supportsStreams: provider.supportsStreams,
      isContainer: provider.isContainer,
      lastObservedCwd: fresh.lastObservedCwd,
      backendRef: fresh.backendRef,
      createdAt: fresh.createdAt,
      details: status.details ?? null,
    };
  }

  async startSandbox(name: string, opts: OperationOptions = {}): Promise<SandboxInfo> {
    const rec = this.record(name);
    const provider = await this.providerOf(rec.backend);
    await this.operations.run(name, 'start', opts.onProgress, async (op) => {
      await provider.start(SandboxDesk.ref(rec), op);
      this.dropEnvironment(name);
      await this.connect(rec, provider);
    });
    return this.info(this.record(name), false);
  }

  async stopSandbox(name: string, opts: OperationOptions = {}): Promise<SandboxInfo> {
    const rec = this.record(name);
    this.dropEnvironment(name);
    const provider = await this.providerOf(rec.backend);
    await this.operations.run(name, 'stop', opts.onProgress, (op) => provider.stop(SandboxDesk.ref(rec), op));
    return this.info(rec, false);
  }

  /** The latest create/start/stop of a sandbox with its progress so far; null when there was none. */
  sandboxProgress(name: string): SandboxOperation | null {
    validate(SandboxName, name);
    return this.operations.get(name);
  }

  async removeSandbox(name: string, opts: { force?: boolean } = {}): Promise<void> {
    const { force } = validate(RemoveSandboxRequest, { name, force: opts.force });
    const rec = this.record(name);
    const provider = await this.providerOf(rec.backend);
    const status = await provider.status(SandboxDesk.ref(rec));
    if (status.state === 'running' && rec.backendRef !== null && !force) {
      throw new SandboxDeskError('refused', `sandbox ${name} is running`, {
        hint: `stop it first (\`sandbox-desk sandbox stop ${name}\`) or pass --force`,
      });
    }
    this.dropEnvironment(name);
    await provider.remove(SandboxDesk.ref(rec), { force: Boolean(force) });
    this.store.sandboxes.delete(name);
  }

  // ---- environments ---------------------------------------------------------------------------

  private dropEnvironment(name: string): void {
    this.environments.delete(name);
    this.shells.closeFor(name);
  }

  private takePendingWarnings(name: string): ExecWarning[] {
    const w = this.pendingWarnings.get(name) ?? [];
    this.pendingWarnings.delete(name);
    return w;
  }

  private async connect(rec: SandboxRecord, provider: SandboxProvider): Promise<SandboxEnvironment> {
    const declared = this.effectiveDeclaredCwd(rec, provider);
    const cachedHome = rec.home && rec.homeIncarnation ? { home: rec.home, incarnation: rec.homeIncarnation } : null;
    let env = await provider.createEnvironment({ cwd: declared.value, sandbox: SandboxDesk.ref(rec), cachedHome });
    // A declared `/home/…` default is only now decidable: the sandbox's own home, or a host path.
    if (provider.isContainer && rec.declaredDefaultCwd?.startsWith('/')) {
      const check = normalizeDeclaredCwd(rec.declaredDefaultCwd, {
        isContainer: true,
        hostHome: this.hostHome,
        sandboxHome: env.home,
        origin: 'default cwd',
        fallback: 'the backend default',
      });
      if (check.warning) {
        this.store.sandboxes.setDeclaredDefaultCwd(rec.name, null);
        this.pendingWarnings.set(rec.name, [...(this.pendingWarnings.get(rec.name) ?? []), check.warning]);
        rec = { ...rec, declaredDefaultCwd: null };
        env = await provider.createEnvironment({
          cwd: this.effectiveDeclaredCwd(rec, provider).value,
          sandbox: SandboxDesk.ref(rec),
          cachedHome: { home: env.home, incarnation: env.incarnation },
        });
      }
    }
    if (rec.home !== env.home || rec.homeIncarnation !== env.incarnation) this.store.sandboxes.setHome(rec.name, env.home, env.incarnation);
    this.environments.set(rec.name, env);
    return env;
  }

  /**
   * The live environment for a command. A session with a live shell skips the backend round trip;
   * otherwise the backend is asked for its state, so a restart or removal is noticed.
   */
  private async environmentFor(rec: SandboxRecord, provider: SandboxProvider, fast: boolean): Promise<SandboxEnvironment> {
    const cached = this.environments.get(rec.name);
    if (cached && fast) return cached;
    const status = await provider.status(SandboxDesk.ref(rec));
    if (status.state === 'missing') {
      this.dropEnvironment(rec.name);
      throw new SandboxDeskError('sandbox_missing', `sandbox ${rec.name} is gone: ${status.detail ?? 'removed outside Sandbox Desk'}`, {
        hint: `remove it with \`sandbox-desk sandbox rm ${rec.name}\` and create it again`,
      });
    }
    if (status.state !== 'running') {
      this.dropEnvironment(rec.name);
      throw new SandboxDeskError('sandbox_not_running', `sandbox ${rec.name} is not running${status.detail ? ` (${status.detail})` : ''}`, {
        hint: `start it with \`sandbox-desk sandbox start ${rec.name}\``,
      });
    }
    if (cached && cached.incarnation === status.incarnation) return cached;
    this.environments.delete(rec.name);
    return this.connect(rec, provider);
  }

  // ---- commands -------------------------------------------------------------------------------

  async exec(input: ExecRequest & { signal?: AbortSignal }): Promise<ExecOutcome> {
    const req = validate(ExecRequest, input);
    const rec = this.record(req.sandbox);
    const provider = await this.providerOf(rec.backend);
    const session = req.session ?? DEFAULT_SESSION;
    const user = req.user ?? undefined;
    const fast = req.mode === 'shell' && this.shells.hasLive(rec.name, session, user ?? this.environments.get(rec.name)?.user ?? undefined);
    const env = await this.environmentFor(rec, provider, fast);
    const declared = this.declaredAfterConnect(rec, provider);
    const ctx = {
      sandbox: rec.name,
      env,
      isContainer: provider.isContainer,
      sessions: this.store.sessions,
      sandboxes: this.store.sandboxes,
      shells: this.shells,
      hostHome: this.hostHome,
      sandboxRoots: this.sandboxRoots(env, declared.value),
      defaultCwd: SandboxDesk.resolvedDefault(env, declared.value),
      standingWarnings: [...(declared.warning ? [declared.warning] : []), ...this.takePendingWarnings(rec.name)],
      reconnect: () => this.environmentFor(rec, provider, false),
      persist: (writes: () => void) => this.store.transaction(writes),
    };
    try {
      return await runCommand(ctx, {
        command: req.command,
        session: req.session,
        parent: req.parent,
        workdir: req.workdir,
        stepId: req.stepId,
        timeoutMs: req.timeoutSeconds !== undefined ? req.timeoutSeconds * 1000 : this.defaultTimeoutMs,
        mode: req.mode,
        user: req.user,
        signal: input.signal,
        maxOutputBytes: req.maxOutputBytes ?? this.maxOutputBytes,
      });
    } catch (err) {
      // A transport failure usually means the sandbox went away under us: say that, precisely.
      if (err instanceof SandboxDeskError && err.code === 'backend_unavailable') {
        this.dropEnvironment(rec.name);
        await this.environmentFor(rec, provider, false);
      }
      throw err;
    }
  }

  /**
   * Where a session stands, by the same policy commands use (its record, guarded, else the default;
   * a step with neither fails closed), with the live environment it stands in.
   */
  async sessionPlan(sandbox: string, session: string | undefined, stepId?: string) {
    const rec = this.record(sandbox);
    const provider = await this.providerOf(rec.backend);
    const env = await this.environmentFor(rec, provider, false);
    const key = session === undefined ? DEFAULT_SESSION : validate(SessionKey, session);
    const existing = this.store.sessions.get(rec.name, key);
    const declared = this.declaredAfterConnect(rec, provider);
    const guard = {
      isContainer: provider.isContainer,
      hostHome: this.hostHome,
      sandboxRoots: this.sandboxRoots(env, declared.value),
      mounts: env.mounts,
    };
    const plan = resolveCommandCwd({
      session: { record: existing?.cwd ?? null, recordSource: existing?.source ?? null },
      defaultCwd: SandboxDesk.resolvedDefault(env, declared.value),
      stepId,
      guard,
    });
    return { rec, env, key, plan, guard };
  }

  /** The declared default as read now, `"~"` resolved to the home the environment measured. */
  private static resolvedDefault(env: SandboxEnvironment, declared: string): string {
    return declared === '~' ? env.home : declared;
  }

  /** Roots a sandbox declares as its own: its measured home, and an absolute declared default cwd. */
  private sandboxRoots(env: SandboxEnvironment, declared: string): string[] {
    return [env.home, ...(declared.startsWith('/') ? [declared] : [])];
  }

  // ---- sessions -------------------------------------------------------------------------------

  /**
   * Creates a session, optionally as a child of another. The child receives its cwd now — the explicit
   * one, else the parent's current record — and never looks the parent up again.
   */
  createSession(input: CreateSessionRequest): SessionInfo {
    const req = validate(CreateSessionRequest, input);
    this.record(req.sandbox);
    if (this.store.sessions.get(req.sandbox, req.key)) {
      throw new SandboxDeskError('name_taken', `session ${JSON.stringify(req.key)} already exists in sandbox ${req.sandbox}`);
    }
    let cwd = req.cwd ?? null;
    if (req.parent !== undefined) {
      const parent = this.store.sessions.get(req.sandbox, req.parent);
      if (!parent)
        throw new SandboxDeskError('not_found', `parent session ${JSON.stringify(req.parent)} does not exist in sandbox ${req.sandbox}`);
      cwd ??= parent.cwd;
    }
    return toSessionInfo(
      this.store.sessions.ensure(req.sandbox, req.key, { parent: req.parent ?? null, cwd, at: new Date().toISOString() }),
    );
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

  /** Closes shells and the database; the process can exit afterwards. */
  async close(): Promise<void> {
    this.io.closeAll();
    await this.desktop.close();
    this.shells.closeAll();
    await this.pluginsReady;
    for (const p of this.registry.all()) await p.dispose?.();
    await this.plugins?.dispose();
    this.store.close();
  }
}

export interface OperationOptions {
  /** Called with each progress event of the operation, as it happens. */
  onProgress?: (event: ProgressEvent) => void;
}

function toSessionInfo(s: SessionRecord): SessionInfo {
  return {
    key: s.key,
    parent: s.parent,
    cwd: s.cwd,
    source: s.source,
    observedAt: s.observedAt,
    createdAt: s.createdAt,
    lastWarnings: s.lastWarnings,
  };
}
