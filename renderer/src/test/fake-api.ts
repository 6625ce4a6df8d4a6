import type {
  ApiClient,
  ApiMethod,
  ApiParams,
  ApiResult,
  BackendInfo,
  PluginInfo,
  CallLogEntry,
  DesktopStatus,
  Lease,
  SandboxInfo,
  SessionInfo,
} from '../../../src/api/contract.js';
import { ApiError } from '../api-client.js';

type Handler<M extends ApiMethod> = (params: ApiParams<M>) => ApiResult<M> | Promise<ApiResult<M>>;
type Handlers = { [M in ApiMethod]: Handler<M> };

export function sandboxInfo(over: Partial<SandboxInfo> & { name: string }): SandboxInfo {
  return {
    backend: 'docker',
    state: 'running',
    stateDetail: null,
    image: 'sandbox-desk/base:latest',
    user: 'dev',
    declaredDefaultCwd: '~',
    defaultCwd: '/home/dev',
    home: '/home/dev',
    tempDir: '/tmp',
    supportsStreams: true,
    isContainer: true,
    lastObservedCwd: null,
    backendRef: 'c0ffee0123456789',
    createdAt: '2025-01-01T00:00:00.000Z',
    details: null,
    operation: null,
    ...over,
  };
}

export function sessionInfo(over: Partial<SessionInfo> & { key: string }): SessionInfo {
  return { parent: null, cwd: null, source: null, observedAt: null, createdAt: '2025-01-01T00:00:00.000Z', lastWarnings: [], ...over };
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
    ...over,
  };
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
  /** The agent bridge's call log, oldest first (as the server keeps it). Seed it, or push to it between polls. */
  callLogEntries: CallLogEntry[] = [];
  backends: BackendInfo[] = [
    { name: 'docker', description: 'Docker containers', isContainer: true, supportsStreams: true, defaultCwd: '~' },
    { name: 'local', description: 'This machine (no isolation)', isContainer: false, supportsStreams: true, defaultCwd: '~' },
  ];
  plugins: PluginInfo[] = [];
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

  private find(name: string): SandboxInfo {
    const s = this.sandboxes.find((x) => x.name === name);
    if (!s) throw new ApiError('not_found', `no sandbox named ${name}`);
    return s;
  }

  private readonly defaults: Handlers = {
    backends: () => this.backends,
    plugins: () => this.plugins,
    listSandboxes: () => this.sandboxes.map((s) => ({ ...s })),
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
    desktopLastAction: () => null,
    screenTicket: (p) => ({
      url: `ws://127.0.0.1:1/ws/desktop/${p.sandbox}?ticket=t${this.calls.length}`,
      ticket: `t${this.calls.length}`,
      viewerId: p.viewerId ?? 'viewer-1',
    }),
    lease: (p) => this.leases[p.sandbox] ?? agentLease(),
    takeControl: (p) =>
      (this.leases[p.sandbox] = { holder: 'human', viewerId: p.viewerId, epoch: 1, since: new Date().toISOString(), reason: null }),
    giveBack: (p) => (this.leases[p.sandbox] = { ...agentLease(), epoch: 2 }),
    terminalOpen: (p) => ({
      url: `ws://127.0.0.1:1/ws/terminal/ab${this.calls.length}?ticket=x`,
      ticket: 'x',
      terminalId: `tid-${p.session ?? 'default'}`,
      session: p.session ?? 'default',
      cwd: '/home/dev',
    }),
    terminalResize: () => ({ ok: true as const }),
    // Like the store: filtered by sandbox and session, the newest `limit` calls, returned oldest first.
    callLog: (p) =>
      this.callLogEntries
        .filter((e) => (p.sandbox === undefined || e.sandbox === p.sandbox) && (p.session === undefined || e.session === p.session))
        .slice(-(p.limit ?? 1000))
        .map((e) => ({ ...e, warnings: [...e.warnings] })),
  };
}
