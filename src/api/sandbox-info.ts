import { SandboxDeskError } from '../shared/errors.js';
import type { BackendStatus, Mount, ProvisionSpec, SandboxEnvironment, SandboxProvider } from '../sandbox/provider.js';
import { isolationOf } from '../sandbox/provider.js';
import { defaultCwdStatus } from './default-cwd-status.js';
import type { SandboxRecord } from '../store/sandbox-store.js';
import type { SessionRecord } from '../store/session-store.js';
import type { OperationSummary, SandboxInfo, SandboxOperation, SandboxState, SessionInfo } from './contract.js';

/** A sandbox as the contract shows it: its record, the backend's status and, when connected, its environment. */
export function sandboxInfo(
  rec: SandboxRecord,
  provider: SandboxProvider,
  status: BackendStatus,
  env: SandboxEnvironment | null,
  declaredDefaultCwd: string,
  operation: SandboxOperation | null = null,
): SandboxInfo {
  return {
    name: rec.name,
    backend: rec.backend,
    state: stateDuring(status.state, operation),
    stateDetail: status.detail ?? null,
    stateSince: status.since ?? null,
    image: rec.image,
    user: rec.user,
    declaredDefaultCwd,
    defaultCwd: env?.defaultCwd ?? null,
    defaultCwdStatus: defaultCwdStatus({
      typed: rec.typedDefaultCwd ?? null,
      declared: rec.declaredDefaultCwd,
      effective: declaredDefaultCwd,
      resolved: env?.defaultCwd ?? null,
    }),
    home: env?.home ?? (status.state === 'running' && rec.homeIncarnation === status.incarnation ? rec.home : null),
    tempDir: env?.getTempDir() ?? null,
    supportsStreams: provider.supportsStreams,
    isContainer: provider.isContainer,
    isolation: isolationOf(provider),
    lastObservedCwd: rec.lastObservedCwd,
    backendRef: rec.backendRef,
    createdAt: rec.createdAt,
    details: status.details ?? null,
    operation: operation ? summarize(operation) : null,
  };
}

/**
 * The state a user should read while an operation runs: the backend says `running` as soon as QEMU's
 * process (or a container) exists, but the sandbox cannot run commands until the operation is done.
 */
export function stateDuring(backend: SandboxState, op: SandboxOperation | null): SandboxState {
  if (!op || op.done) return backend;
  if (op.kind === 'stop') return 'stopping';
  // A checkpoint or a fork leaves the sandbox as it is (running); a restore replaces it.
  if (op.kind === 'checkpoint' || op.kind === 'fork') return backend;
  if (op.kind === 'create' && backend !== 'running') return 'creating';
  return 'starting';
}

function summarize(op: SandboxOperation): OperationSummary {
  return {
    kind: op.kind,
    startedAt: op.startedAt,
    message: op.events.at(-1)?.message ?? null,
    cancellable: op.cancellable,
    cancelled: op.cancelled,
  };
}

/** A sandbox whose backend cannot answer: listed as `unavailable` with why, never hiding the others. */
export function unavailableInfo(rec: SandboxRecord, provider: SandboxProvider | null, err: unknown): SandboxInfo {
  const why = err instanceof SandboxDeskError ? err.oneLine() : err instanceof Error ? err.message : String(err);
  return {
    name: rec.name,
    backend: rec.backend,
    state: 'unavailable',
    stateDetail: why,
    stateSince: null,
    image: rec.image,
    user: rec.user,
    declaredDefaultCwd: rec.declaredDefaultCwd ?? '~',
    defaultCwd: null,
    defaultCwdStatus: defaultCwdStatus({
      typed: rec.typedDefaultCwd ?? null,
      declared: rec.declaredDefaultCwd,
      effective: rec.declaredDefaultCwd ?? '~',
      resolved: null,
    }),
    home: null,
    tempDir: null,
    supportsStreams: provider?.supportsStreams === true,
    isContainer: provider?.isContainer !== false,
    isolation: provider ? isolationOf(provider) : 'container',
    lastObservedCwd: rec.lastObservedCwd,
    backendRef: rec.backendRef,
    createdAt: rec.createdAt,
    details: null,
    operation: null,
  };
}

export function toSessionInfo(s: SessionRecord): SessionInfo {
  return {
    key: s.key,
    parent: s.parent,
    cwd: s.cwd,
    source: s.source,
    observedAt: s.observedAt,
    createdAt: s.createdAt,
    lastWarnings: s.lastWarnings,
    restoredFrom: s.restoredFrom,
  };
}

/** The row a new sandbox starts with: what was asked, nothing measured yet. */
export function newSandboxRecord(req: {
  name: string;
  backend: string;
  image?: string | undefined;
  user?: string | undefined;
  declaredDefaultCwd: string | null;
  /** The user's `defaultCwd`, exactly as typed. */
  defaultCwd?: string | undefined;
  mounts: Mount[];
  env: Record<string, string>;
  options: Record<string, string>;
}): SandboxRecord {
  return {
    name: req.name,
    backend: req.backend,
    image: req.image ?? null,
    user: req.user ?? null,
    declaredDefaultCwd: req.declaredDefaultCwd,
    typedDefaultCwd: req.defaultCwd ?? null,
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
}

/** What the backend provisions, labelled so the app's own resources (per data directory) are recognisable. */
export function provisionSpec(rec: SandboxRecord, instanceId: string): ProvisionSpec {
  return {
    name: rec.name,
    image: rec.image,
    user: rec.user,
    mounts: rec.mounts,
    env: rec.env,
    options: rec.options,
    labels: { 'io.sandbox-desk.managed': 'true', 'io.sandbox-desk.sandbox': rec.name, 'io.sandbox-desk.instance': instanceId },
    resourceName: `sdesk-${instanceId}-${rec.name}`,
  };
}
