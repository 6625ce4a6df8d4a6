/**
 * The provider contract (seed 001, made first-class).
 *
 * A *provider* describes a backend (local, docker, qemu, or one a plugin adds). An *environment* is one
 * live, connected sandbox of that backend. Everything the app starts inside a sandbox — one-shot
 * commands, session shells, the screen relay, the browser — goes through `execPrefix`, so a backend gets
 * the whole product by implementing this file.
 */
import type { IDisposable } from '../shared/lifecycle.js';

/** A host directory made visible inside the sandbox. Used to translate host paths, never to guess them. */
export interface Mount {
  hostPath: string;
  sandboxPath: string;
  readOnly?: boolean;
}

export interface ExecPrefixOptions {
  /** The account to run as inside the sandbox; backends that cannot switch users ignore it. */
  user?: string | undefined;
  /** true: the caller needs a terminal (docker `-t`, ssh `-tt`); false: a byte stream on stdin/stdout. */
  interactive: boolean;
}

/** What the store knows about one sandbox; handed to the provider for every lifecycle call. */
export interface SandboxRef {
  name: string;
  /** Backend-specific identity, e.g. a container id. null until provisioned. */
  backendRef: string | null;
  image: string | null;
  user: string | null;
  mounts: Mount[];
  env: Record<string, string>;
  options: Record<string, string>;
}

/** `paused`: frozen by CheckpointCapability.pause; commands wait until resume. */
export type BackendState = 'running' | 'paused' | 'stopped' | 'missing';

export interface BackendStatus {
  state: BackendState;
  /** Changes whenever the backend restarts or replaces the sandbox; environments compare it to notice. */
  incarnation: string | null;
  detail?: string;
  /** When the sandbox entered this state (ISO 8601), if the backend knows. */
  since?: string;
  /** Backend-specific facts shown by `inspect` (e.g. a VM's accel, sshPort, pid, serialLog). Plain data. */
  details?: Record<string, string | number | boolean | null>;
}

/** One step of long work (an image build, a VM boot), streamed to the CLI and the UI as it happens. */
export interface ProgressEvent {
  /** A short stable id of the step, e.g. `process`, `serial`, `ssh`, `cloud-init`. */
  step: string;
  message: string;
  /** `warning` events are also returned with the result as warnings (e.g. a KVM → TCG fallback). */
  level?: 'info' | 'warning';
}

/** Passed to lifecycle calls that can take long. */
export interface LifecycleContext {
  progress?: (event: ProgressEvent) => void;
  signal?: AbortSignal;
}

/** What a provider is given when it is made: where it may keep its own files. */
export interface ProviderContext {
  /** The app's data directory; a provider keeps its files under `<dataDir>/<provider name>/`. */
  dataDir: string;
}

export interface ProvisionSpec {
  name: string;
  image: string | null;
  user: string | null;
  mounts: Mount[];
  env: Record<string, string>;
  options: Record<string, string>;
  /** Marks resources as ours, e.g. container labels. */
  labels: Record<string, string>;
  /** A name unique to this data directory, for backends whose resources share a global namespace. */
  resourceName: string;
}

export interface ProvisionResult {
  backendRef: string | null;
  /** The user the sandbox will run commands as, when the backend chose it (e.g. the image's USER). */
  user: string | null;
  image: string | null;
}

export interface CreateEnvironmentOptions {
  /**
   * The sandbox's default cwd as declared: an absolute in-sandbox path or `"~"`, passed verbatim.
   * The environment resolves `"~"` to the home it actually got after connecting.
   */
  cwd: string;
  sandbox: SandboxRef;
  /**
   * The home measured at an earlier connect, and the incarnation it was measured in. A provider may
   * reuse it when the sandbox is still that incarnation, instead of measuring again.
   */
  cachedHome?: { home: string; incarnation: string } | null;
}

/** One live sandbox. Cheap to hold; created by `SandboxProvider.createEnvironment`. */
export interface SandboxEnvironment {
  /** The account commands run as when no user is given. */
  readonly user: string | null;
  /** The user's real home, measured after connecting (never inferred from the user name). */
  readonly home: string;
  /** The declared default cwd with `"~"` resolved to `home`. */
  readonly defaultCwd: string;
  /**
   * The environment's last *observed* cwd: shared by every session and never inherited by one.
   * null until a command reported one.
   */
  cwd: string | null;
  readonly mounts: readonly Mount[];
  /** Identity of this incarnation of the sandbox; a different value means the sandbox was recreated. */
  readonly incarnation: string;
  /**
   * The local argv that runs whatever follows it inside the sandbox, e.g. `docker exec -i <id>`.
   * The app appends `bash -c <script> …` as separate words. null when it cannot right now.
   */
  execPrefix(opts: ExecPrefixOptions): string[] | null;
  /** A directory inside the sandbox for scratch files; also the last resort of the cwd walk. */
  getTempDir(): string;
  /**
   * true when the words after the prefix are joined into one remote command line (ssh): the exec
   * layer then quotes each word itself.
   */
  readonly joinsArgv?: boolean;
  /**
   * A folder of this machine (`hostDir`) the sandbox sees read-only at `sandboxDir`: the app may listen
   * on Unix sockets there that processes it starts through execPrefix connect to, so a stream's bytes
   * skip the exec's stdio (the desktop's screen: src/desktop/inbox.ts). Set by a backend only from the
   * sandbox's real mounts (docker: docker-inbox.ts, read from `inspect`), never inferred; plugins'
   * environments never carry it (the guard does not pass it on). Absent: streams use the exec's stdio.
   */
  readonly inbox?: { readonly hostDir: string; readonly sandboxDir: string };
}

import type { Isolation } from '../shared/isolation.js';
import type { LogCapability, ResourceCapability } from './observability.js';
export type { Isolation } from '../shared/isolation.js';

/** A provider's isolation, with the default for providers (plugins) that do not say. */
export function isolationOf(p: Pick<SandboxProvider, 'isolation' | 'isContainer'>): Isolation {
  return p.isolation ?? (p.isContainer ? 'container' : 'host');
}

export interface SandboxProvider {
  /** The value users pass as `--backend`; lowercase `[a-z0-9_-]`. */
  readonly name: string;
  /** The backend has its own filesystem root: host paths mean nothing inside it. */
  readonly isContainer: boolean;
  /**
   * What keeps the sandbox apart from this machine, as the UI labels it. Absent: `container` when
   * isContainer, else `host`. (isContainer is about paths: a VM has its own filesystem root too.)
   */
  readonly isolation?: Isolation;
  /**
   * Where commands start when nothing else says: an absolute in-sandbox path or `"~"`. Read on every
   * command, so it must be cheap. Relative or host-looking values are ignored with a warning.
   */
  readonly defaultCwd: string | undefined;
  /** The backend can host long-lived stdio streams (screen, browser, session shells). */
  readonly supportsStreams: boolean;
  /** One line for `--help` and the UI. */
  readonly description: string;

  provision(spec: ProvisionSpec, ctx?: LifecycleContext): Promise<ProvisionResult>;
  /** Starts the sandbox and returns once it can run commands; long boots report progress. */
  start(ref: SandboxRef, ctx?: LifecycleContext): Promise<void>;
  stop(ref: SandboxRef, ctx?: LifecycleContext): Promise<void>;
  remove(ref: SandboxRef, opts: { force: boolean }): Promise<void>;
  status(ref: SandboxRef): Promise<BackendStatus>;
  /** Connects to a running sandbox. Throws `sandbox_not_running` / `sandbox_missing` when it cannot. */
  createEnvironment(opts: CreateEnvironmentOptions): Promise<SandboxEnvironment>;
  /**
   * Optional: saving and restoring the sandbox's state (checkpoints, forks, pause). Absent: the app
   * refuses those operations with a message naming the missing capability.
   */
  readonly checkpoints?: CheckpointCapability;
  /** Optional: the backend's own logs of a sandbox (src/sandbox/observability.ts). */
  readonly logs?: LogCapability<SandboxRef>;
  /** Optional: a sandbox's CPU and memory use (src/sandbox/observability.ts). */
  readonly resources?: ResourceCapability<SandboxRef>;
  /**
   * Optional: the engine's own feed of changes to the resources carrying `labels` (Docker events), so
   * a sandbox stopped or killed behind the app's back shows without polling. Runs until disposed;
   * reconnects by itself, and says when the engine goes away and comes back.
   */
  watch?(labels: Record<string, string>, listener: ProviderWatchListener): IDisposable;
  /**
   * Optional: enforcing a network policy (src/shared/network-policy.ts) where the sandbox's root cannot
   * lift it. Absent: only `open` is accepted; any other mode is refused with the reason.
   */
  readonly networkPolicy?: NetworkCapability;
  /** Frees what the provider holds open in this process (connections, multiplexers). */
  dispose?(): Promise<void>;
}

/**
 * What a backend saved for one checkpoint, as the app stores it and hands back to restore, fork and
 * removal. The app owns the bookkeeping (ids, labels, session cwd records); the backend owns the bytes.
 */
export interface CheckpointArtifact {
  /** The backend's handle: an image id (docker commit), a file or folder under the checkpoint dir (qemu). */
  ref: string;
  /** true when the sandbox's memory (running processes) was saved too, not only its disk. */
  memory: boolean;
  /** Bytes the checkpoint takes on disk, when the backend can tell. */
  sizeBytes: number | null;
  /** Backend-specific facts (plain data) the backend needs back later, e.g. the VM's memory size. */
  details?: Record<string, string | number | boolean | null>;
}

export interface CheckpointSpec {
  /** The app's id for the checkpoint (`[a-z0-9]{1,32}`): use it in resource names (image tags, files). */
  id: string;
  /** Save the memory too; a backend that cannot throws `unsupported` with the reason, never saves disk-only. */
  memory: boolean;
  /** A directory the app made for this checkpoint's files (empty, 0700); the app removes it with the checkpoint. */
  dir: string;
  /** Marks resources as ours (image labels), like ProvisionSpec.labels. */
  labels: Record<string, string>;
}

/** A provider's checkpoint operations. Each call gets the sandbox as the store knows it. */
export interface CheckpointCapability {
  /** Whether `memory: true` can work here, and why not when it cannot (e.g. "the engine has no CRIU"). */
  memorySupport(ref: SandboxRef): Promise<{ supported: boolean; reason?: string }>;
  /** Saves the sandbox's state (running or stopped; a stopped one is disk-only). The sandbox keeps running. */
  checkpoint(ref: SandboxRef, spec: CheckpointSpec, ctx?: LifecycleContext): Promise<CheckpointArtifact>;
  /**
   * Puts the sandbox back to the artifact's state, keeping its name, user, mounts, labels and hardening.
   * With memory it comes back running as it was; disk-only it comes back started. The incarnation changes.
   */
  restore(ref: SandboxRef, artifact: CheckpointArtifact, ctx?: LifecycleContext): Promise<ProvisionResult>;
  /** Makes a new sandbox (spec) from the artifact, started, sharing nothing that could collide with the source. */
  fork(artifact: CheckpointArtifact, spec: ProvisionSpec, ctx?: LifecycleContext): Promise<ProvisionResult>;
  /** Whether the artifact is still there (e.g. the image was removed behind the app's back), and why not. */
  verify(artifact: CheckpointArtifact): Promise<{ ok: boolean; detail?: string }>;
  /**
   * Deletes what the artifact holds; a missing artifact is not an error. For a checkpoint that never
   * returned (`details.interrupted`, with its `id` and `dir`), everything the backend may still be making
   * under that id goes too, once it is no longer being made (an engine finishes a commit its caller left).
   */
  removeCheckpoint(artifact: CheckpointArtifact): Promise<void>;
  /**
   * Removes checkpoint resources carrying `labels` (this data directory's) whose id has no record
   * (`recorded(id)` false): what an interrupted checkpoint's engine made after its cleanup ran. Returns
   * the ids removed. Optional: a backend whose artifacts are only files in the checkpoint's dir has none.
   */
  removeUnrecorded?(labels: Record<string, string>, recorded: (id: string) => boolean): Promise<string[]>;
  /** Freezes every process in the sandbox (cgroup freezer, QMP `stop`); status reads `paused`. */
  pause(ref: SandboxRef): Promise<void>;
  resume(ref: SandboxRef): Promise<void>;
}

/** What a provider's `watch` reports. */
export interface ProviderWatchListener {
  /** A resource of ours changed: `sandbox` from its labels when known, `action` as the engine says it. */
  changed(change: { sandbox: string | null; backendRef: string | null; action: string }): void;
  /** The engine became unreachable (detail says why) or reachable again. */
  engine(reachable: boolean, detail: string | null): void;
}

import type { NetworkMode, NetworkPolicy } from '../shared/network-policy.js';

/** What the app hands a backend to enforce a sandbox's network policy. */
export interface NetworkPlan {
  policy: NetworkPolicy;
  /**
   * A host folder holding the egress proxy's Unix socket (`proxy.sock`) for this sandbox: the backend
   * routes the sandbox's only way out to it (a relay container's bind mount, QEMU's guestfwd).
   */
  socketDir: string;
  /** The sandbox's resource name (as in ProvisionSpec), for the backend's own extra resources. */
  resourceName: string;
  labels: Record<string, string>;
}

export interface NetworkCapability {
  /** The modes this backend can enforce. */
  readonly modes: readonly NetworkMode[];
  /** The mode of a running sandbox can change (else: only while stopped; the allow list always can). */
  readonly liveModeSwitch: boolean;
  /**
   * Enforces `plan` for the sandbox, stopped or running; called before every start and on every change.
   * Takes effect on the sandbox's next connection.
   */
  apply(ref: SandboxRef, plan: NetworkPlan): Promise<void>;
  /** Frees what apply made (a relay, a network) when the sandbox stops (`stopped`) or goes (`removed`). */
  release(ref: SandboxRef, plan: NetworkPlan, when: 'stopped' | 'removed'): Promise<void>;
}
