import type { Isolation } from '../../shared/isolation.js';
/**
 * The typed JSON RPC between the app and an isolated plugin host (a child Node process, one per
 * plugin). Everything is plain data: argv arrays and resolved paths, never live objects — which is
 * what lets an isolated plugin keep `"~"` resolution and streams (the environment's exec prefixes
 * are computed in the child and carried over as data).
 */
import type { ErrorCode } from '../../shared/errors.js';
import type {
  BackendStatus,
  CheckpointArtifact,
  CheckpointSpec,
  CreateEnvironmentOptions,
  Mount,
  ProgressEvent,
  ProvisionResult,
  ProvisionSpec,
  SandboxRef,
} from '../provider.js';

/** What the child learnt from the plugin's `register(ctx)`. */
export interface ProviderDescriptor {
  name: unknown;
  isContainer: boolean;
  /** The provider's declared isolation when it is a known one (the window labels the backend by it). */
  isolation?: Isolation;
  supportsStreams: boolean;
  /** The declared default cwd as read in the child, or the message of the getter's exception. */
  defaultCwd: { value: unknown } | { error: string };
  description: string;
  hasDispose: boolean;
  /** The provider has `checkpoints` (CheckpointCapability): its calls cross as `checkpoints.*`. */
  hasCheckpoints?: boolean;
}

/** Keys of the precomputed prefixes: the sandbox's own user, and root; × interactive or not. */
export type PrefixKey = 'default:i' | 'default:n' | 'root:i' | 'root:n';

/** One prefix as the plugin answered it: the value (checked in the app), or the exception's message. */
export type PrefixAnswer = { value: unknown } | { error: string };

/** A connected environment, as data. */
export interface EnvironmentData {
  user: unknown;
  home: unknown;
  defaultCwd: unknown;
  incarnation: unknown;
  mounts: Mount[];
  tempDir: unknown;
  joinsArgv: boolean;
  prefixes: Record<PrefixKey, PrefixAnswer>;
}

export interface ProviderCalls {
  provision: { args: [ProvisionSpec]; result: ProvisionResult };
  start: { args: [SandboxRef]; result: void };
  stop: { args: [SandboxRef]; result: void };
  remove: { args: [SandboxRef, { force: boolean }]; result: void };
  status: { args: [SandboxRef]; result: BackendStatus };
  createEnvironment: { args: [CreateEnvironmentOptions]; result: EnvironmentData };
  dispose: { args: []; result: void };
  // CheckpointCapability's calls, forwarded as data (issue 15).
  'checkpoints.memorySupport': { args: [SandboxRef]; result: { supported: boolean; reason?: string } };
  'checkpoints.checkpoint': { args: [SandboxRef, CheckpointSpec]; result: CheckpointArtifact };
  'checkpoints.restore': { args: [SandboxRef, CheckpointArtifact]; result: ProvisionResult };
  'checkpoints.fork': { args: [CheckpointArtifact, ProvisionSpec]; result: ProvisionResult };
  'checkpoints.verify': { args: [CheckpointArtifact]; result: { ok: boolean; detail?: string } };
  'checkpoints.removeCheckpoint': { args: [CheckpointArtifact]; result: void };
  'checkpoints.pause': { args: [SandboxRef]; result: void };
  'checkpoints.resume': { args: [SandboxRef]; result: void };
}
export type ProviderMethod = keyof ProviderCalls;

export interface LoadRequest {
  entry: string;
  plugin: string;
  dataDir: string;
  apiVersion: number;
}
export interface LoadResult {
  providers: ProviderDescriptor[];
  warnings: string[];
}

/** Parent → child. */
export type HostRequest =
  | { id: number; kind: 'load'; load: LoadRequest }
  | { id: number; kind: 'call'; provider: string; method: ProviderMethod; args: unknown[] }
  | { id: number; kind: 'ping' };

export interface WireError {
  code: ErrorCode;
  message: string;
  hint?: string;
  /** The plugin threw an ordinary Error (not one made with ctx.error): the app names the plugin and method. */
  plain?: boolean;
}

/** Child → parent. A call's result carries the provider's `defaultCwd` read right after it. */
export type HostMessage =
  | { id: number; kind: 'result'; value: unknown; defaultCwd?: ProviderDescriptor['defaultCwd'] }
  | { id: number; kind: 'error'; error: WireError }
  | { id: number; kind: 'progress'; event: ProgressEvent }
  | { kind: 'log'; level: 'info' | 'warn'; message: string };
