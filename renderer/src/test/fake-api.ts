import type { PoolsView } from '../../../src/shared/pool-types.js';
import type {
  AgentActionView,
  ApiClient,
  ApiMethod,
  ApiParams,
  ApiResult,
  BackendInfo,
  ImageInfo,
  ImageTask,
  PluginInfo,
  CallLogEntry,
  CheckpointInfo,
  NetworkLogEntry,
  DesktopStatus,
  FileEntry,
  Lease,
  SandboxInfo,
  SessionInfo,
  TerminalInfo,
  OperationView,
} from '../../../src/api/contract.js';
import { ApiError } from '../app/api-client.js';

type Handler<M extends ApiMethod> = (params: ApiParams<M>) => ApiResult<M> | Promise<ApiResult<M>>;
type Handlers = { [M in ApiMethod]: Handler<M> };

export function sandboxInfo(over: Partial<SandboxInfo> & { name: string }): SandboxInfo {
  return {
    backend: 'docker',
    state: 'running',
    stateDetail: null,
    stateSince: null,
    image: 'sandbox-desk/base:latest',
    user: 'dev',
    declaredDefaultCwd: '~',
    defaultCwd: '/home/dev',
    defaultCwdStatus: { typed: null, state: 'backend-default', text: '~ → /home/dev (not given: the default)' },
    home: '/home/dev',
    tempDir: '/tmp',
    supportsStreams: true,
    isContainer: true,
    isolation: 'container',
    lastObservedCwd: null,
    backendRef: 'c0ffee0123456789',
    createdAt: '2025-01-01T00:00:00.000Z',
    details: null,
    operation: null,
    ...over,
  };
}

export function imageInfo(over: Partial<ImageInfo> & { ref: string }): ImageInfo {
  return {
    kind: 'docker',
    id: `sha256:${'ab'.repeat(32)}`,
    tags: over.kind === 'vm' ? [] : [over.ref],
    sizeBytes: 1e8,
    createdAt: '2025-01-01T00:00:00.000Z',
    usedBy: [],
    desktop: null,
    origin: 'app',
    path: null,
    derivedFrom: null,
    ...over,
  };
}

export function sessionInfo(over: Partial<SessionInfo> & { key: string }): SessionInfo {
  return {
    parent: null,
    cwd: null,
    source: null,
    observedAt: null,
    createdAt: '2025-01-01T00:00:00.000Z',
    lastWarnings: [],
    restoredFrom: null,
    ...over,
  };
}

export function desktopStatus(over: Partial<DesktopStatus> & { sandbox: string }): DesktopStatus {
  return {
    running: false,
    placement: 'sandbox',
    display: null,
    geometry: null,
    leaseHolder: 'agent',
    leaseViewer: null,
    missing: [],
    reason: null,
    chromiumSandbox: null,
    displayIsolation: null,
    displayIsolationReason: null,
    displayUser: null,
    shellDisplayGranted: false,
    recording: { on: false, bytes: 0, since: null, warning: null },
    ...over,
  };
}

export function terminalInfo(over: Partial<TerminalInfo> & { terminalId: string; sandbox: string; session: string }): TerminalInfo {
  return { startedIn: '/home/dev', createdAt: '2025-01-01T00:00:00.000Z', viewers: 0, cols: 80, rows: 24, scrollbackBytes: 0, ...over };
}

let nextCallId = 1;

/** One agent call as the bridge logs it (an execute_shell_command that ran and stayed put, unless overridden). */
export function callLogEntry(over: Partial<CallLogEntry> = {}): CallLogEntry {
  return {
    id: nextCallId++,
    at: '2025-01-01T00:00:00.000Z',
    sandbox: 'alpha',
    session: 'default',
    tool: 'execute_shell_command',
    cwdUsed: '/home/dev',
    cwdObserved: '/home/dev',
    exitCode: 0,
    warnings: [],
    error: null,
    durationMs: 42,
    ...over,
  };
}

const agentLease = (): Lease => ({ holder: 'agent', viewerId: null, epoch: 0, since: '2025-01-01T00:00:00.000Z', reason: null });

/**
 * An in-memory ApiClient for component tests: a small, believable Sandbox Desk (sandboxes, sessions,
 * desktops, leases) that records every call. `on` replaces one method; `fail` makes one throw the way
 * the server would (an ApiError with code, message and hint).
 */
export class FakeApi implements ApiClient {
  readonly calls: Array<{ method: ApiMethod; params: unknown }> = [];
  sandboxes: SandboxInfo[] = [];
  sessions: Record<string, SessionInfo[]> = {};
  desktops: Record<string, DesktopStatus> = {};
  leases: Record<string, Lease> = {};
  /** What desktopLastAction answers per sandbox (none: null, no agent has acted). */
  lastActions: Record<string, AgentActionView> = {};
  /** The agent bridge's call log, oldest first (as the server keeps it). Seed it, or push to it between polls. */
  callLogEntries: CallLogEntry[] = [];
  /** What readLog answers (every source). */
  logText = 'line one\nline two\n';
  networkLogEntries: NetworkLogEntry[] = [];
  backends: BackendInfo[] = [
    { name: 'docker', description: 'Docker containers', isContainer: true, isolation: 'container', supportsStreams: true, defaultCwd: '~' },
    {
      name: 'local',
      description: 'This machine (no isolation)',
      isContainer: false,
      isolation: 'host',
      supportsStreams: true,
      defaultCwd: '~',
    },
  ];
  plugins: PluginInfo[] = [];
  /** The core's open terminals (terminalOpen adds one, terminalClose ends it; a window switching away does not). */
  terminals: TerminalInfo[] = [];
  /** The images listImages answers with; builds started by buildImage are tasks in `tasks`. */
  images: ImageInfo[] = [
    imageInfo({ ref: 'sandbox-desk/base:latest', desktop: false, sizeBytes: 315e6 }),
    imageInfo({ ref: 'sandbox-desk/desktop:latest', desktop: true, sizeBytes: 1.45e9 }),
    imageInfo({
      kind: 'vm',
      ref: 'debian-test',
      id: null,
      tags: [],
      desktop: null,
      sizeBytes: 350e6,
      origin: 'named',
      path: '/var/cache/sandbox-desk/images/debian-test',
    }),
  ];
  tasks: Record<string, ImageTask> = {};
  checkpoints: CheckpointInfo[] = [];
  /** The fake sandbox's files: folder path → entries (the file panel's tests fill it). */
  files: Record<string, FileEntry[]> = {};
  /** The fake desktop's clipboard. */
  clipboard = '';
  private readonly overrides: Partial<Record<ApiMethod, (params: unknown) => unknown>> = {};

  constructor(
    init: {
      sandboxes?: SandboxInfo[];
      sessions?: Record<string, SessionInfo[]>;
      desktops?: Record<string, DesktopStatus>;
      callLog?: CallLogEntry[];
    } = {},
  ) {
    this.sandboxes = init.sandboxes ?? [];
    this.sessions = init.sessions ?? {};
    this.desktops = init.desktops ?? {};
    this.callLogEntries = init.callLog ?? [];
  }

  on<M extends ApiMethod>(method: M, handler: Handler<M>): this {
    this.overrides[method] = handler as (params: unknown) => unknown;
    return this;
  }

  fail(method: ApiMethod, code: string, message: string, hint?: string): this {
    this.overrides[method] = () => {
      throw new ApiError(code, message, hint);
    };
    return this;
  }

  /** The params of every call to one method, in order. */
  callsOf<M extends ApiMethod>(method: M): Array<ApiParams<M>> {
    return this.calls.filter((c) => c.method === method).map((c) => c.params as ApiParams<M>);
  }

  async call<M extends ApiMethod>(method: M, params: ApiParams<M>): Promise<ApiResult<M>> {
    this.calls.push({ method, params });
    await Promise.resolve();
    const override = this.overrides[method];
    if (override) return (await override(params)) as ApiResult<M>;
    return await (this.defaults[method] as Handler<M>)(params);
  }

  /** A running task with no events; tests push events and end it through `tasks`. */
  newTask(kind: ImageTask['kind'], target: string): ImageTask {
    const id = `task-${Object.keys(this.tasks).length + 1}`;
    this.tasks[id] = {
      id,
      kind,
      target,
      startedAt: '2025-01-01T00:00:00.000Z',
      events: [],
      dropped: 0,
      state: 'running',
      error: null,
      result: null,
    };
    return { ...this.tasks[id] };
  }

  private find(name: string): SandboxInfo {
    const s = this.sandboxes.find((x) => x.name === name);
    if (!s) throw new ApiError('not_found', `no sandbox named ${name}`);
    return s;
  }

  /** What poolList answers (the sidebar's pool section). */
  pools: PoolsView = { memoryBudgetMiB: 2048, memoryMiB: 0, refilling: true, pools: [] };

  /** What listOperations answers (the task list). */
  operations: OperationView[] = [];

  private readonly defaults: Handlers = {
    backends: () => this.backends,
    plugins: () => this.plugins,
    listSandboxes: () => this.sandboxes.map((s) => ({ ...s })),
    poolList: () => structuredClone(this.pools),
    poolSet: () => structuredClone(this.pools),
    poolDrain: () => ({ removed: 0 }),
    inspectSandbox: (p) => this.find(p.name),
    createSandbox: (p) => {
      if (this.sandboxes.some((s) => s.name === p.name)) throw new ApiError('name_taken', `a sandbox named ${p.name} already exists`);
      const s = sandboxInfo({
        name: p.name,
        backend: p.backend,
        image: p.image ?? 'sandbox-desk/base:latest',
        declaredDefaultCwd: p.defaultCwd ?? '~',
        user: p.user ?? 'dev',
      });
      this.sandboxes.push(s);
      return { sandbox: s, warnings: [] };
    },
    startSandbox: (p) => Object.assign(this.find(p.name), { state: 'running' as const }),
    stopSandbox: (p) => Object.assign(this.find(p.name), { state: 'stopped' as const }),
    sandboxProgress: () => null,
    cancelOperation: (p) => {
      throw new ApiError('refused', `nothing to cancel: no create or start of sandbox ${p.name} is running`);
    },
    removeSandbox: (p) => {
      const s = this.find(p.name);
      if (s.state === 'running' && !p.force) throw new ApiError('refused', `${p.name} is running`, 'stop it first, or force');
      this.sandboxes = this.sandboxes.filter((x) => x !== s);
      return { removed: p.name };
    },
    listSessions: (p) => this.sessions[p.sandbox] ?? [],
    createSession: (p) => sessionInfo({ key: p.key, parent: p.parent ?? null, cwd: p.cwd ?? null }),
    removeSession: (p) => ({ removed: p.key }),
    exec: () => {
      throw new ApiError('internal', 'exec is not faked');
    },
    desktopStatus: (p) => this.desktops[p.sandbox] ?? desktopStatus({ sandbox: p.sandbox }),
    desktopStart: (p) =>
      (this.desktops[p.sandbox] = desktopStatus({ sandbox: p.sandbox, running: true, display: ':20', geometry: '1280x800' })),
    desktopStop: (p) => (this.desktops[p.sandbox] = desktopStatus({ sandbox: p.sandbox })),
    desktopLastAction: (p) => this.lastActions[p.sandbox] ?? null,
    // The CLI's and the SDK's methods: the UI calls none of them, so a component that does fails loudly.
    desktopScreenshot: () => {
      throw new ApiError('unsupported', 'the fake API has no screen to shoot');
    },
    desktopAct: () => {
      throw new ApiError('unsupported', 'the fake API has no desktop to act on');
    },
    desktopBrowserEndpoint: () => {
      throw new ApiError('unsupported', 'the fake API has no browser to forward');
    },
    disabledPlugins: () => [],
    agentTokenCreate: () => {
      throw new ApiError('unsupported', 'the fake API makes no agent tokens');
    },
    agentTokenList: () => [],
    agentTokenRemove: (p) => {
      throw new ApiError('not_found', `no agent token ${JSON.stringify(p.id)}`);
    },
    screenTicket: (p) => ({
      url: `ws://127.0.0.1:1/ws/desktop/${p.sandbox}?ticket=t${this.calls.length}`,
      ticket: `t${this.calls.length}`,
      viewerId: p.viewerId ?? 'viewer-1',
    }),
    lease: (p) => this.leases[p.sandbox] ?? agentLease(),
    takeControl: (p) =>
      (this.leases[p.sandbox] = { holder: 'human', viewerId: p.viewerId, epoch: 1, since: new Date().toISOString(), reason: null }),
    giveBack: (p) => (this.leases[p.sandbox] = { ...agentLease(), epoch: 2 }),
    waitForControl: (p) => {
      const l = this.leases[p.sandbox] ?? agentLease();
      const human = l.holder === 'human';
      return { sandbox: p.sandbox, mayAct: !human, holder: l.holder, viewerId: l.viewerId, waitedMs: 0, timedOut: human, reason: l.reason };
    },
    terminalOpen: (p) => {
      const session = p.session ?? 'default';
      const terminalId = `tid-${session}-${this.calls.length}`;
      this.terminals.push(terminalInfo({ terminalId, sandbox: p.sandbox, session, cols: p.cols, rows: p.rows }));
      return { url: `ws://127.0.0.1:1/ws/terminal/ab${this.calls.length}?ticket=x`, ticket: 'x', terminalId, session, cwd: '/home/dev' };
    },
    terminalResize: () => ({ ok: true as const }),
    listTerminals: (p) => this.terminals.filter((t) => t.sandbox === p.sandbox).map((t) => ({ ...t })),
    terminalAttach: (p) => {
      const t = this.terminals.find((x) => x.terminalId === p.terminalId);
      if (!t) throw new ApiError('not_found', `no terminal ${p.terminalId}`);
      return {
        url: `ws://127.0.0.1:1/ws/terminal/${t.terminalId}?ticket=a${this.calls.length}`,
        ticket: `a${this.calls.length}`,
        terminalId: t.terminalId,
        session: t.session,
        cwd: t.startedIn,
      };
    },
    terminalClose: (p) => {
      if (!this.terminals.some((t) => t.terminalId === p.terminalId)) throw new ApiError('not_found', `no terminal ${p.terminalId}`);
      this.terminals = this.terminals.filter((t) => t.terminalId !== p.terminalId);
      return { closed: p.terminalId };
    },
    listImages: () => ({ images: this.images.map((i) => ({ ...i })), warnings: [] }),
    inspectImage: (p) => {
      const i = this.images.find((x) => x.ref === p.ref);
      if (!i) throw new ApiError('image_not_found', `no image ${p.ref}`);
      return { ...i, details: {} };
    },
    removeImage: (p) => {
      const i = this.images.find((x) => x.ref === p.ref);
      if (!i) throw new ApiError('image_not_found', `no image ${p.ref}`);
      if (i.usedBy.length) throw new ApiError('refused', `image ${p.ref} is used by sandbox ${i.usedBy.join(', ')}`);
      this.images = this.images.filter((x) => x !== i);
      return { removed: p.ref };
    },
    buildImage: (p) => this.newTask('build', p.tag ?? p.vmName ?? '?'),
    buildVmTemplate: (p) => this.newTask('vm-template', p.image),
    pullImage: () => {
      throw new ApiError('registry_unreachable', 'no container registry is reachable from this machine', 'build the image here instead');
    },
    imageTask: (p) => {
      const t = this.tasks[p.id];
      if (!t) throw new ApiError('not_found', `no image task ${p.id}`);
      return { ...t, events: [...t.events] };
    },
    cancelImageTask: (p) => {
      const t = this.tasks[p.id]!;
      if (t.state === 'running')
        Object.assign(t, { state: 'cancelled', error: { code: 'cancelled', message: `${t.target}: cancelled; nothing was tagged` } });
      return { ...t };
    },
    checkpointSandbox: (p) => {
      this.find(p.sandbox);
      const cp: CheckpointInfo = {
        id: `cp${this.checkpoints.length + 1}`,
        sandbox: p.sandbox,
        backend: 'docker',
        label: p.label ?? null,
        createdAt: '2025-01-01T00:00:00.000Z',
        sizeBytes: 1024,
        memory: Boolean(p.memory),
        broken: false,
        brokenDetail: null,
        sessions: [],
      };
      this.checkpoints.unshift(cp);
      return { checkpoint: cp, warnings: [] };
    },
    listCheckpoints: (p) => this.checkpoints.filter((c) => p.sandbox === undefined || c.sandbox === p.sandbox).map((c) => ({ ...c })),
    restoreSandbox: (p) => ({ sandbox: this.find(p.sandbox), sessions: this.sessions[p.sandbox] ?? [], warnings: [] }),
    forkSandbox: (p) => {
      const names = p.count === undefined ? [p.as] : Array.from({ length: p.count }, (_, i) => `${p.as}-${i + 1}`);
      const made = names.map((name) => sandboxInfo({ ...this.find(p.sandbox), name }));
      this.sandboxes.push(...made);
      return { sandboxes: made, warnings: [] };
    },
    removeCheckpoint: (p) => {
      this.checkpoints = this.checkpoints.filter((c) => c.id !== p.id);
      return { removed: p.id };
    },
    pauseSandbox: (p) => Object.assign(this.find(p.name), { state: 'paused' as const }),
    resumeSandbox: (p) => Object.assign(this.find(p.name), { state: 'running' as const }),
    // Like the store: filtered by sandbox and session, the newest `limit` calls, returned oldest first.
    callLog: (p) =>
      this.callLogEntries
        .filter((e) => (p.sandbox === undefined || e.sandbox === p.sandbox) && (p.session === undefined || e.session === p.session))
        .slice(-(p.limit ?? 1000))
        .map((e) => ({ ...e, warnings: [...e.warnings] })),
    logSources: () => [
      { id: 'container', label: 'Container output', kind: 'backend', exists: true, detail: 'docker logs c0ffee012345' },
      { id: 'desktop', label: 'Desktop launcher', kind: 'desktop', exists: false, detail: 'no desktop has run' },
      { id: 'app', label: 'Sandbox Desk (this app)', kind: 'app', exists: true, detail: '/tmp/sandbox-desk.log' },
    ],
    readLog: (p) => ({ sandbox: p.sandbox, source: p.source ?? 'container', text: this.logText, tail: p.tail ?? 200 }),
    logTicket: (p) => ({
      url: `ws://127.0.0.1:1/ws/logs/${p.sandbox}?ticket=l${this.calls.length}`,
      ticket: `l${this.calls.length}`,
      source: p.source ?? 'container',
    }),
    sandboxStats: (p) => ({
      sandbox: p.sandbox,
      at: new Date().toISOString(),
      cpuPercent: 12.5,
      memoryBytes: 64 * 2 ** 20,
      memoryLimitBytes: 2 ** 30,
    }),
    engineInfo: () => ({
      docker: {
        reachable: true,
        error: null,
        endpoint: 'unix:///var/run/docker.sock',
        version: '26.1.5',
        apiVersion: '1.45',
        disk: { images: 2 * 2 ** 30, containers: 0, volumes: 0, buildCache: 0 },
      },
    }),
    // No event stream here: the panels poll, as against a core without one.
    eventsTicket: () => {
      throw new ApiError('unsupported', 'the fake API serves no event stream');
    },
    listOperations: () => this.operations.map((o) => ({ ...o })),
    listFiles: (p) => {
      const cwd = '/home/dev';
      const path = !p.path || p.path === '.' ? cwd : p.path.startsWith('/') ? p.path : `${cwd}/${p.path}`;
      const entries = this.files[path];
      if (!entries) throw new ApiError('not_found', `${path} does not exist in the sandbox`);
      return { path, cwd, session: p.session ?? 'default', entries: entries.map((e) => ({ ...e })) };
    },
    makeDirectory: (p) => {
      const dir = p.dir ?? '/home/dev';
      (this.files[dir] ??= []).push({ name: p.name, type: 'dir', size: 4096 });
      this.files[`${dir}/${p.name}`] = [];
      return { path: `${dir}/${p.name}`, cwd: '/home/dev' };
    },
    fileUploadTicket: (p) => {
      const dir = p.dir ?? '/home/dev';
      return {
        url: `http://127.0.0.1:1/files/upload?ticket=u${this.calls.length}`,
        ticket: `u${this.calls.length}`,
        path: `${dir}/${p.name}`,
        cwd: '/home/dev',
      };
    },
    fileDownloadTicket: (p) => {
      const path = p.path.startsWith('/') ? p.path : `/home/dev/${p.path}`;
      const name = path.slice(path.lastIndexOf('/') + 1);
      return {
        url: `http://127.0.0.1:1/files/download?ticket=d${this.calls.length}`,
        ticket: `d${this.calls.length}`,
        path,
        name,
        size: 1,
      };
    },
    desktopClipboard: (p) => {
      if (p.text !== undefined) this.clipboard = p.text;
      return { text: this.clipboard, bytes: this.clipboard.length };
    },
    // Network policy: kept on the sandbox like the core keeps it; the log is whatever a test put in.
    sandboxNetwork: (p) => {
      const s = this.find(p.name);
      const before = s.network ?? { mode: 'open' as const, allow: [] };
      const allow = [...new Set([...before.allow, ...(p.allow ?? [])])].filter((e) => !(p.deny ?? []).includes(e));
      s.network = { mode: p.mode ?? (p.allow?.length && before.mode !== 'allow' ? 'allow' : before.mode), allow };
      return { ...s.network, allow: [...s.network.allow] };
    },
    networkLog: (p) => this.networkLogEntries.filter((e) => e.sandbox === p.sandbox).slice(-(p.limit ?? 500)),
    // Replay (issue 16): nothing recorded unless a test overrides these.
    replayList: () => ({ recordings: [] }),
    replayEvents: (p) => ({ sandbox: p.sandbox, startedAt: null, endedAt: null, events: [] }),
    replayFrame: (p) => {
      throw new ApiError('not_found', `sandbox ${p.sandbox} has no screen recording`);
    },
    replayCast: (p) => {
      throw new ApiError('not_found', `sandbox ${p.sandbox} has no recording of terminal ${p.terminalId}`);
    },
    replayExport: (p) => {
      throw new ApiError('not_found', `sandbox ${p.sandbox} has no recording`);
    },
    replayRemove: () => ({ removedBytes: 0 }),
  };
}
