/**
 * The one typed contract of Sandbox Desk: every request the CLI, the app, the browser mode and agents
 * send, validated here at the boundary, and the shapes they get back. Schemas and types only — the
 * renderer imports this file, so nothing here may need Node.
 */
import type { ReplayEvent, ReplayExportResult, ReplayFrame, ReplayRecording } from '../shared/replay-types.js';
import { z } from 'zod';
import { cwdPathProblem } from '../shared/cwd-path.js';
import { fileNameProblem } from '../shared/file-names.js';
import type { AgentActionView, DesktopStatus } from '../shared/desktop-types.js';
import type { ExecResult, ExecWarning } from '../shared/exec-result.js';
import type { ControlWait, Lease } from '../shared/lease-types.js';
import type { TerminalInfo } from '../shared/terminal-types.js';
import type { CallLogEntry } from '../shared/call-log-types.js';
import type { Isolation } from '../shared/isolation.js';
import type { AgentTokenInfo } from '../shared/agent-scope.js';
export type { AgentTokenInfo } from '../shared/agent-scope.js';
import type { ImageInfo, ImageTask } from '../shared/image-types.js';
import type { EngineInfo, LogSourceInfo, LogText, SandboxStats } from '../shared/observability-types.js';
import type { CoreEvent, OperationView } from '../shared/core-events.js';
import type { PoolsView } from '../shared/pool-types.js';
export type { CoreEvent, CoreEventTopic, OperationView } from '../shared/core-events.js';
import { ALLOW_ENTRY_HINT, NETWORK_MODES, allowEntryProblem, type NetworkLogEntry, type NetworkPolicy } from '../shared/network-policy.js';
export type { NetworkLogEntry, NetworkMode, NetworkPolicy } from '../shared/network-policy.js';
export { NETWORK_MODES } from '../shared/network-policy.js';

export type { AgentActionView, AgentRefusalView, DesktopStatus } from '../shared/desktop-types.js';
export type { ControlWait } from '../shared/lease-types.js';
export type { Lease } from '../shared/lease-types.js';
export type { TerminalInfo } from '../shared/terminal-types.js';
export type { CallLogEntry } from '../shared/call-log-types.js';
export type { Isolation } from '../shared/isolation.js';
export { ISOLATION_LABEL } from '../shared/isolation.js';
export type { ImageInfo, ImageKind, ImageTask, ImageTaskEvent } from '../shared/image-types.js';
export type { EngineInfo, LogSourceInfo, LogText, SandboxStats } from '../shared/observability-types.js';

export type { ExecResult, ExecWarning, ExecMode, CwdSource, StreamEncoding, WarningCode } from '../shared/exec-result.js';

export const SANDBOX_NAME_MAX = 63;

/** A directory path as `--workdir` and a session's cwd take it: the one validator both use. */
function dirPath(what: string, base = z.string()) {
  return base.superRefine((path, ctx) => {
    const problem = cwdPathProblem(path, what);
    if (problem) ctx.addIssue({ code: 'custom', message: `${problem.message} (${problem.hint})` });
  });
}

export const SandboxName = z
  .string({ error: 'sandbox name is required' })
  .min(1, 'sandbox name is empty')
  .max(SANDBOX_NAME_MAX, `sandbox name is longer than ${SANDBOX_NAME_MAX} characters`)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_.-]*$/,
    'sandbox name may only contain letters, digits, _ . and - (no spaces or /), and must start with a letter or digit',
  );

/** Session keys are stored verbatim, whatever characters they hold; only NUL and absurd lengths are refused. */
export const SessionKey = z
  .string()
  .min(1, 'session key is empty')
  .max(1024, 'session key is longer than 1024 characters')
  .refine((k) => !k.includes('\0'), 'session key contains a NUL byte');

export const MountSpec = z.object({
  hostPath: z.string().startsWith('/', 'mount hostPath must be absolute'),
  sandboxPath: z.string().startsWith('/', 'mount sandboxPath must be absolute'),
  readOnly: z.boolean().optional(),
});

/** Network policy (docs/network-policy.md): the mode, and allow-list entries as `--allow` takes them. */
export const NetworkModeSchema = z.enum(NETWORK_MODES as ['open', 'offline', 'allow'], { error: 'network mode is open, offline or allow' });
export const AllowEntry = z.string().superRefine((entry, ctx) => {
  const problem = allowEntryProblem(entry);
  if (problem) ctx.addIssue({ code: 'custom', message: `${problem} (${ALLOW_ENTRY_HINT})` });
});

export const CreateSandboxRequest = z.object({
  name: SandboxName,
  backend: z.string().min(1, 'backend is required'),
  image: z.string().min(1).optional(),
  defaultCwd: z.string().optional(),
  user: z
    .string()
    .regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]*)?$/, 'user must be a user name or uid (optionally :group)')
    .optional(),
  start: z.boolean().default(true),
  mounts: z.array(MountSpec).default([]),
  env: z
    .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment variable names are letters, digits and _'), z.string())
    .default({}),
  options: z.record(z.string(), z.string()).default({}),
  /** Default `open` (or `allow` when allow entries are given). */
  network: NetworkModeSchema.optional(),
  allow: z.array(AllowEntry).max(1000, 'at most 1000 allow entries').optional(),
});
export type CreateSandboxRequest = z.input<typeof CreateSandboxRequest>;

export const RemoveSandboxRequest = z.object({ name: SandboxName, force: z.boolean().default(false) });

export const ExecRequest = z.object({
  sandbox: SandboxName,
  command: z.string().min(1, 'command is empty'),
  session: SessionKey.optional(),
  parent: SessionKey.optional(),
  workdir: dirPath('workdir').optional(),
  stepId: z.string().min(1, 'step id is empty').optional(),
  timeoutSeconds: z
    .number({ error: 'timeout must be a number of seconds' })
    .positive('timeout must be a positive number of seconds')
    .max(24 * 3600, 'timeout is longer than a day')
    .optional(),
  mode: z.enum(['shell', 'oneshot']).default('shell'),
  user: z.string().optional(),
  maxOutputBytes: z.number().int().positive().optional(),
});
export type ExecRequest = z.input<typeof ExecRequest>;

export const CreateSessionRequest = z.object({
  sandbox: SandboxName,
  key: SessionKey,
  parent: SessionKey.optional(),
  /** The cwd the session starts with; given directly, never looked up later. */
  cwd: dirPath('session cwd', z.string().startsWith('/', 'session cwd must be an absolute path')).optional(),
});
export type CreateSessionRequest = z.input<typeof CreateSessionRequest>;

/**
 * `unavailable`: the backend could not be asked (engine down, plugin failed); stateDetail says why.
 * `paused`: frozen (sandbox pause); resume thaws it.
 * `creating`, `starting`, `stopping`: a create/start/stop of this core is under way (`operation` has its
 * latest step); a VM that is booting reads `starting` until it can run commands, never `running`.
 */
export type SandboxState = 'running' | 'paused' | 'stopped' | 'missing' | 'unavailable' | 'creating' | 'starting' | 'stopping';

/**
 * The default cwd as the user gave it and what it became: `typed` is exactly what was typed at create
 * (null: none given, the backend's default applies); `state` says how it stands now, `text` says it in
 * words ("~ → /home/agent (resolved)").
 */
export interface DefaultCwdStatus {
  typed: string | null;
  state: 'resolved' | 'as-typed' | 'normalized' | 'ignored' | 'not-connected' | 'backend-default';
  text: string;
}

export interface SandboxInfo {
  name: string;
  backend: string;
  state: SandboxState;
  /** Why the state is what it is, e.g. "exited with code 137" or "removed outside Sandbox Desk". */
  stateDetail: string | null;
  /** When the sandbox entered its state (a container's stop time), if the backend knows; for "Stopped 10 s ago". */
  stateSince: string | null;
  image: string | null;
  user: string | null;
  /** As declared: an absolute in-sandbox path or "~". */
  declaredDefaultCwd: string;
  /** The declared default with "~" resolved; null until connected. */
  defaultCwd: string | null;
  /** What the user typed for the default cwd and what became of it (Details shows it; default-cwd-status.ts). */
  defaultCwdStatus: DefaultCwdStatus;
  /** The sandbox user's home, measured after connecting; null until then. */
  home: string | null;
  tempDir: string | null;
  supportsStreams: boolean;
  /** Host paths mean nothing inside (true for containers and VMs alike). */
  isContainer: boolean;
  /** What keeps it apart from this machine: container, virtual-machine or host. */
  isolation: Isolation;
  /** The environment's last observed cwd (shared by every session). */
  lastObservedCwd: string | null;
  backendRef: string | null;
  createdAt: string;
  /** Backend-specific facts (a VM's accel, sshPort, pid, serialLog); null when the backend has none. */
  details: Record<string, string | number | boolean | null> | null;
  /** The create/start/stop under way, with its latest step (for the list's row); null when none is. */
  operation: OperationSummary | null;
  /** The network policy in force: mode and allow list (docs/network-policy.md). */
  network?: NetworkPolicy;
}

export interface OperationSummary {
  kind: SandboxOperation['kind'];
  startedAt: string;
  /** The latest step's message; null before the first one. */
  message: string | null;
  cancellable: boolean;
  cancelled: boolean;
}

/** The latest long operation on a sandbox (create, start, stop) and its progress, for polling clients. */
export interface SandboxOperation {
  kind: 'create' | 'start' | 'stop' | 'checkpoint' | 'restore' | 'fork';
  startedAt: string;
  /** The most recent events (at most 200), oldest first. */
  events: Array<{ step: string; message: string; level: 'info' | 'warning'; at: string }>;
  done: boolean;
  error: string | null;
  /** A create or start can be cancelled (`cancelOperation`); a stop cannot. */
  cancellable: boolean;
  /** A cancel was asked for: the operation is undoing what it made, then ends with the `cancelled` error. */
  cancelled: boolean;
}

export interface SessionInfo {
  key: string;
  parent: string | null;
  /** The session's own cwd record. */
  cwd: string | null;
  source: string | null;
  observedAt: string | null;
  createdAt: string;
  lastWarnings: ExecWarning[];
  /** The checkpoint this session's record was written from by a restore or fork; null otherwise. */
  restoredFrom: string | null;
}

// ---- checkpoints (issue 15) ---------------------------------------------------------------------

/** A checkpoint id as the app makes them: 1-32 lowercase letters and digits. */
export const CheckpointId = z
  .string({ error: 'checkpoint id is required' })
  .regex(/^[a-z0-9]{1,32}$/, 'checkpoint id is 1-32 lowercase letters and digits (see `sandbox-desk checkpoint list`)');

/** How many forks one call may make: enough to give several agents a copy each, bounded for the disk. */
export const FORK_COUNT_MAX = 20;

export const ForkRequest = z.object({
  sandbox: SandboxName,
  checkpoint: CheckpointId,
  as: SandboxName,
  count: z
    .number({ error: `count must be a whole number from 1 to ${FORK_COUNT_MAX}` })
    .int(`count must be a whole number from 1 to ${FORK_COUNT_MAX}`)
    .min(1, `count must be at least 1 (valid: 1 to ${FORK_COUNT_MAX})`)
    .max(FORK_COUNT_MAX, `count must be at most ${FORK_COUNT_MAX} (valid: 1 to ${FORK_COUNT_MAX})`)
    .optional(),
});
export type ForkRequest = z.input<typeof ForkRequest>;

export const CheckpointRequest = z.object({
  sandbox: SandboxName,
  label: z.string().max(200, 'label is longer than 200 characters').optional(),
  memory: z.boolean().default(false),
});
export type CheckpointRequest = z.input<typeof CheckpointRequest>;

export interface CheckpointInfo {
  id: string;
  /** The sandbox it was taken of (it may have been removed since; forks still work). */
  sandbox: string;
  backend: string;
  label: string | null;
  createdAt: string;
  sizeBytes: number | null;
  /** The sandbox's memory was saved too (running processes come back), not only its disk. */
  memory: boolean;
  /** What the backend saved is gone (e.g. the image was removed outside Sandbox Desk); brokenDetail says why. */
  broken: boolean;
  brokenDetail: string | null;
  /** The sessions whose cwd records travel with it. */
  sessions: Array<{ key: string; cwd: string | null }>;
}

export interface CheckpointResult {
  checkpoint: CheckpointInfo;
  warnings: ExecWarning[];
}

export interface RestoreResult {
  sandbox: SandboxInfo;
  /** The sessions as restored, each re-measured in the restored sandbox. */
  sessions: SessionInfo[];
  warnings: ExecWarning[];
}

export interface ForkResult {
  sandboxes: SandboxInfo[];
  warnings: ExecWarning[];
}

export interface CreateSandboxResult {
  sandbox: SandboxInfo;
  warnings: ExecWarning[];
  /** True: a ready sandbox of a warm pool was claimed (issue 37); false: made now. The core always says which. */
  warm?: boolean;
  /** The pool that served it, as `pool list` describes its template (only when warm): the window says it. */
  warmPool?: string;
  /** Why no pool served this create (absent when warm). */
  warmReason?: string;
}

export type { ExecResult as ExecResponse };

// ---- the method table ---------------------------------------------------------------------------
// Every call the UI (Electron bridge or browser mode), and later the agent bridge, can make: one name,
// one params schema, one result type. The server validates params with these schemas; clients get
// the types. Nothing else crosses the boundary.

const Named = z.object({ name: SandboxName });
/** A warm pool's template as `pool set` / `pool drain` name it (config.ts holds the same shape). */
const PoolTemplateParams = z.strictObject({
  image: z.string().min(1).max(512).optional(),
  cpus: z.number().positive().max(1024).optional(),
  memoryMiB: z
    .number()
    .int()
    .min(16)
    .max(1024 * 1024)
    .optional(),
  desktop: z.boolean().default(false),
});
const OfSandbox = z.object({ sandbox: SandboxName });
const Placement = z.enum(['auto', 'sandbox', 'host']);
const ViewerId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'viewerId is 1-64 letters, digits, _ or -');
const TerminalId = z.string().regex(/^[0-9a-f]{1,64}$/, 'terminalId is the hex id terminalOpen or listTerminals gave');
const TerminalSize = {
  cols: z.number().int().min(2).max(1000),
  rows: z.number().int().min(1).max(500),
};

export interface BackendInfo {
  name: string;
  description: string;
  isContainer: boolean;
  isolation: Isolation;
  supportsStreams: boolean;
  /** The backend's own default cwd declaration ("~", an absolute path, or null). */
  defaultCwd: string | null;
}

/** One plugin as the app loaded it (or failed to): what `sandbox-desk plugin list` shows. */
export interface PluginInfo {
  name: string;
  version: string | null;
  path: string;
  source: string;
  isolation: 'in-process' | 'host';
  /** loaded: its backends are usable; failed: it never loaded (see error); crashed: its isolated host is down for good. */
  status: 'loaded' | 'failed' | 'crashed';
  providers: string[];
  error: string | null;
  warnings: string[];
}

/**
 * Where the server serves its streams (a single-use ticket rides in the query as `?ticket=`), and
 * the codes a stream closes with. Servers build grant URLs from these; clients read close codes here.
 */
export const STREAM_PATHS = {
  /** + the sandbox name, percent-encoded. */
  desktop: '/ws/desktop/',
  /** + the terminal id (hex). */
  terminal: '/ws/terminal/',
  /** + the sandbox name, percent-encoded: a log's text frames (logTicket). */
  logs: '/ws/logs/',
  /** The core's pushed state; `&since=SEQ&epoch=E` catches up after a reconnect. */
  events: '/ws/events',
} as const;

/**
 * What `/ws/events` sends, one JSON text frame each: first `hello` (the bus's epoch and last seq;
 * `resync` when the asked-for `since` could not be served, so the client re-reads its state), then
 * every event in order.
 */
export type EventFrame = { type: 'hello'; epoch: string; seq: number; resync: boolean } | { type: 'event'; event: CoreEvent };
export { CLOSE as STREAM_CLOSE, TICKET_REFUSALS, type CloseCode } from '../shared/stream-close-codes.js';

/** A stream the client opens itself: a WebSocket URL with a single-use ticket inside. */
export interface StreamGrant {
  url: string;
  ticket: string;
}

export interface TerminalGrant extends StreamGrant {
  terminalId: string;
  session: string;
  /** Where the shell starts (the session's cwd, checked as enterable). */
  cwd: string;
}

const ImageRef = z.string().min(1, 'image is required').max(512, 'image reference is longer than 512 characters');
const AbsolutePath = (what: string) => z.string().startsWith('/', `${what} must be an absolute path`);

/** `image build`: a Docker image from a folder and/or a Dockerfile, or a VM image by name. */
export const BuildImageRequest = z
  .object({
    tag: z.string().min(1).optional(),
    context: AbsolutePath('the build folder').optional(),
    file: AbsolutePath('the Dockerfile').optional(),
    vmName: z.string().min(1).optional(),
  })
  .refine((r) => (r.vmName === undefined) !== (r.tag === undefined), {
    message: 'give either tag (a Docker build, with context or file) or vmName (a VM image by name)',
  })
  .refine((r) => r.vmName !== undefined || r.context !== undefined || r.file !== undefined, {
    message: 'a Docker build needs context (a folder with a Dockerfile) or file (a Dockerfile)',
  });
export type BuildImageRequest = z.input<typeof BuildImageRequest>;

/** `image template build`: a VM image booted once and saved with its memory (src/sandbox/qemu/vm-template.ts). */
export const BuildVmTemplateRequest = z.object({
  image: ImageRef,
  memory: z
    .number()
    .int('memory must be a whole number of MiB')
    .min(128)
    .max(1024 * 1024)
    .optional(),
  cpus: z.number().int('cpus must be a whole number').min(1).max(64).optional(),
  desktop: z.boolean().optional(),
});
export type BuildVmTemplateRequest = z.input<typeof BuildVmTemplateRequest>;

export interface ImageListing {
  images: ImageInfo[];
  /** What could not be listed and why (e.g. the Docker engine is down). */
  warnings: string[];
}

/** A log of a sandbox and how many of its last lines (logSources lists the ids). */
export const LOG_TAIL_MAX = 10_000;
export const LogRequest = z.object({
  sandbox: SandboxName,
  source: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'log source is an id such as container, serial or app (see logSources)')
    .optional(),
  tail: z
    .number({ error: 'tail must be a number of lines' })
    .int('tail must be a whole number of lines')
    .min(0, 'tail must be 0 or more lines')
    .max(LOG_TAIL_MAX, `tail is more than ${LOG_TAIL_MAX} lines`)
    .optional(),
});
// ---- files and clipboard (the file panel, drops, the screen's clipboard) ----------------------

/** Where the local server takes uploads (PUT, body = the file) and serves downloads (GET); + `?ticket=`. */
export const FILE_PATHS = { upload: '/files/upload', download: '/files/download' } as const;

/**
 * A download as a program reads it (add `&result=trailer` to the grant's URL): the size in a header,
 * the bytes, then how it ended in a trailer — `ok`, or Sandbox Desk's error as `{code,message,hint}`
 * JSON — so a failure after the first byte (the file changed while read) still says what went wrong.
 */
export const DOWNLOAD_RESULT = { query: 'result=trailer', sizeHeader: 'x-sandbox-desk-size', trailer: 'x-sandbox-desk-result' } as const;

/** A single-use URL for one file transfer over HTTP (see FILE_PATHS). */
export interface FileTransferGrant {
  url: string;
  ticket: string;
}

export interface FileEntry {
  name: string;
  type: 'file' | 'dir' | 'link' | 'other';
  size: number;
}

/** A folder's entries; `path` is the folder as the sandbox resolved it, `cwd` the session's cwd it was anchored at. */
export interface FileListing {
  path: string;
  cwd: string;
  session: string;
  entries: FileEntry[];
}

/** One path inside the sandbox: absolute, or relative to the session's cwd. */
const SandboxPath = (what: string) =>
  z
    .string()
    .min(1, `${what} is empty`)
    .max(4096, `${what} is longer than 4096 characters`)
    .refine((p) => !/[\0\n\r]/.test(p), `${what} contains a NUL byte or a line break`);
/** One name in a folder (no / or NUL): what an upload or a new folder is called. */
const EntryName = (what: string) =>
  z.string().superRefine((name, ctx) => {
    const problem = fileNameProblem(name);
    if (problem) ctx.addIssue({ code: 'custom', message: `bad ${what} name: ${problem}` });
  });
const InFolder = {
  sandbox: SandboxName,
  session: SessionKey.optional(),
  /** The folder: absolute, or relative to the session's cwd (default: the cwd itself). */
  dir: SandboxPath('folder').optional(),
};

/** A time on the replay's clock: ISO 8601. */
const ReplayTime = (what: string) =>
  z.string().refine((t) => !Number.isNaN(Date.parse(t)), `${what} is not a time; give ISO 8601, e.g. 2026-01-02T03:04:05Z`);

// ---- the desktop's frames and actions (what the CLI's `desktop screenshot|click|…` and the SDK send) ----

/** One frame of the live screen: its id (for actions in its coordinates) and geometry. */
export interface DesktopFrame {
  frameId: string;
  width: number;
  height: number;
  screenWidth: number;
  screenHeight: number;
  /** frame width / screen width: 1 unless a maximum size was asked for. */
  scale: number;
  takenAt: string;
  format: 'png' | 'jpeg' | 'webp';
  firstSinceChange: boolean;
}

/** What an action did: the pointer measured after it (screen, and frame coordinates with a frameId). */
export interface DesktopActionResult {
  pointer: { x: number; y: number };
  pointerInFrame?: { x: number; y: number };
  frameId?: string;
  via: 'rfb' | 'xdotool';
  note?: string;
  target?: { x: number; y: number };
}

// Coordinates are checked by the desktop against the screen (or the frame): here only their type.
const Px = z.number({ error: 'coordinates are whole numbers of pixels' }).int('coordinates are whole numbers of pixels');
const MouseButton = z.union([z.literal(1), z.literal(2), z.literal(3)], { error: 'button is 1, 2 or 3' });
export const DesktopAction = z.discriminatedUnion(
  'kind',
  [
    z.object({ kind: z.literal('move'), x: Px, y: Px }),
    z.object({ kind: z.literal('click'), x: Px, y: Px, button: MouseButton.optional(), double: z.boolean().optional() }),
    z.object({ kind: z.literal('drag'), x: Px, y: Px, toX: Px, toY: Px, button: MouseButton.optional() }),
    z.object({
      kind: z.literal('scroll'),
      x: Px,
      y: Px,
      direction: z.enum(['up', 'down', 'left', 'right'], { error: 'direction is up, down, left or right' }),
      amount: z.number().int().optional(),
    }),
    z.object({ kind: z.literal('type'), text: z.string().max(100_000, 'text is longer than 100000 characters') }),
    z.object({ kind: z.literal('key'), keys: z.string().min(1, 'keys is empty').max(1000) }),
  ],
  { error: 'action kind is move, click, drag, scroll, type or key' },
);
export type DesktopAction = z.input<typeof DesktopAction>;

/** A phantom: carries a method's result type in the table, no value at run time. */
const returns = <T>(): T => undefined as T;

export const API = {
  backends: { params: z.object({}), result: returns<BackendInfo[]>() },
  plugins: { params: z.object({}), result: returns<PluginInfo[]>() },
  /** The plugin names config `plugins.disabled` turns off (`plugin list` says so under its table). */
  disabledPlugins: { params: z.object({}), result: returns<string[]>() },
  /** Makes an agent token for the MCP tools (optionally for named sandboxes only); its secret is in this answer only. */
  agentTokenCreate: {
    // Strict: a misspelt `sandboxes` must be refused, not mint a token for every sandbox.
    params: z.strictObject({
      label: z
        .string()
        .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'label is 1-64 letters, digits, _ . or -')
        .optional(),
      sandboxes: z.array(SandboxName).min(1, 'give at least one sandbox, or leave sandboxes out for every sandbox').max(1000).optional(),
    }),
    result: returns<{ token: string; info: AgentTokenInfo }>(),
  },
  /** The agent tokens: ids, labels, scopes, never the secrets. */
  agentTokenList: { params: z.object({}), result: returns<AgentTokenInfo[]>() },
  /** Removes an agent token by id or label; not_found when there is none. */
  agentTokenRemove: { params: z.object({ id: z.string().min(1, 'token id is empty').max(200) }), result: returns<{ removed: string }>() },
  listSandboxes: { params: z.object({}), result: returns<SandboxInfo[]>() },
  // ---- warm pools (issue 37) ----
  /** The warm pools: each template's size, ready and filling counts, state and warning; the memory budget. */
  poolList: { params: z.object({}), result: returns<PoolsView>() },
  /** Sets a pool's size (0 removes it); refused when the pools would hold more than pools.memoryBudgetMiB. */
  poolSet: { params: PoolTemplateParams.extend({ size: z.number().int().min(0).max(32) }), result: returns<PoolsView>() },
  /** Empties a pool (or, with all, every pool) now and removes it from the config. */
  poolDrain: {
    params: z
      .object({ template: PoolTemplateParams.optional(), all: z.boolean().optional() })
      .refine((p) => p.all === true || p.template !== undefined, {
        message: 'say which pool to drain (its template: image, cpus, memory, desktop) or all',
      }),
    result: returns<{ removed: number }>(),
  },
  inspectSandbox: { params: Named, result: returns<SandboxInfo>() },
  createSandbox: { params: CreateSandboxRequest, result: returns<CreateSandboxResult>() },
  startSandbox: { params: Named, result: returns<SandboxInfo>() },
  stopSandbox: { params: Named, result: returns<SandboxInfo>() },
  sandboxProgress: { params: Named, result: returns<SandboxOperation | null>() },
  /** Cancels the sandbox's running create or start; it cleans up what it made (a create leaves nothing). */
  cancelOperation: { params: Named, result: returns<SandboxOperation>() },
  removeSandbox: { params: RemoveSandboxRequest, result: returns<{ removed: string }>() },
  listSessions: { params: OfSandbox, result: returns<SessionInfo[]>() },
  createSession: { params: CreateSessionRequest, result: returns<SessionInfo>() },
  removeSession: { params: OfSandbox.extend({ key: SessionKey }), result: returns<{ removed: string }>() },
  exec: { params: ExecRequest, result: returns<ExecResult>() },
  desktopStatus: { params: OfSandbox.extend({ placement: Placement.optional() }), result: returns<DesktopStatus>() },
  desktopStart: {
    params: OfSandbox.extend({
      placement: Placement.optional(),
      geometry: z
        .string()
        .regex(/^\d{3,4}x\d{3,4}$/, 'geometry is WIDTHxHEIGHT')
        .optional(),
      // Run the desktop as the sandbox user, so the sandbox's shell can reach the display (status says so).
      grantShellDisplay: z.boolean().optional(),
      // false: do not record the screen for replay (issue 16; default: config replay.record).
      record: z.boolean().optional(),
    }),
    result: returns<DesktopStatus>(),
  },
  desktopStop: { params: OfSandbox, result: returns<DesktopStatus>() },
  /** A frame of the live screen: the image (base64) and the frame's id and geometry, for actions in its coordinates. */
  desktopScreenshot: {
    params: OfSandbox.extend({
      maxWidth: z.number().int('maxWidth is a whole number of pixels').optional(),
      maxHeight: z.number().int('maxHeight is a whole number of pixels').optional(),
      format: z.enum(['png', 'jpeg', 'webp'], { error: 'format is png, jpeg or webp' }).optional(),
      quality: z.number().int().min(1).max(100).optional(),
    }),
    result: returns<{ frame: DesktopFrame; image: string }>(),
  },
  /** One input action on the desktop as the agent (refused while a person holds control); with frameId, in that frame's pixels. */
  desktopAct: {
    params: OfSandbox.extend({ action: DesktopAction, frameId: z.string().min(1).max(100).optional() }),
    result: returns<DesktopActionResult>(),
  },
  /** Forwards the desktop browser's DevTools port to the server's machine: the endpoint to connect to. */
  desktopBrowserEndpoint: {
    params: OfSandbox,
    result: returns<{ httpUrl: string; webSocketDebuggerUrl: string; localPort: number }>(),
  },
  /** The last agent action on the desktop (any process), for the viewer to show for a few seconds. */
  desktopLastAction: { params: OfSandbox, result: returns<AgentActionView | null>() },
  screenTicket: {
    params: OfSandbox.extend({ viewerId: ViewerId.optional() }),
    // clipboardMaxBytes: the cap on cut text both ways (config `clipboard.maxBytes`); the viewer says when text is over it.
    result: returns<StreamGrant & { viewerId: string; clipboardMaxBytes?: number }>(),
  },
  lease: { params: OfSandbox, result: returns<Lease>() },
  takeControl: { params: OfSandbox.extend({ viewerId: ViewerId }), result: returns<Lease>() },
  giveBack: { params: OfSandbox.extend({ viewerId: ViewerId }), result: returns<Lease>() },
  /**
   * Waits until the agent may act (no person holds control), at most timeoutMs (default 30 s, at most
   * 10 min); a timeout is an answer (`timedOut`, `mayAct: false`), not an error.
   */
  waitForControl: {
    params: OfSandbox.extend({
      timeoutMs: z
        .number()
        .int()
        .min(0, 'timeoutMs is negative')
        .max(600_000, 'timeoutMs is over 600000 (10 min): call again to wait longer')
        .optional(),
    }),
    result: returns<ControlWait>(),
  },
  terminalOpen: { params: OfSandbox.extend({ session: SessionKey.optional(), ...TerminalSize }), result: returns<TerminalGrant>() },
  /**
   * The last `limit` agent calls (default 1000), oldest first; with `beforeId`, the last ones older than
   * that call: a reader pages back through a log longer than one answer (the CLI's `calls --jsonl`).
   */
  callLog: {
    params: z.object({
      sandbox: SandboxName.optional(),
      session: SessionKey.optional(),
      limit: z.number().int().min(1).max(10_000).optional(),
      beforeId: z.number().int().min(1).optional(),
    }),
    result: returns<CallLogEntry[]>(),
  },
  terminalResize: { params: z.object({ terminalId: TerminalId, ...TerminalSize }), result: returns<{ ok: true }>() },
  /** A sandbox's open terminals: they live in the core until closed, so any window finds and reattaches to them. */
  listTerminals: { params: OfSandbox, result: returns<TerminalInfo[]>() },
  /** A new single-use ticket to an open terminal: the stream replays its scrollback, then is live (several viewers may attach). */
  terminalAttach: { params: z.object({ terminalId: TerminalId }), result: returns<TerminalGrant>() },
  /** Ends a terminal's shell (its tab was closed): the one way a window ends a terminal. */
  terminalClose: { params: z.object({ terminalId: TerminalId }), result: returns<{ closed: string }>() },
  listImages: { params: z.object({}), result: returns<ImageListing>() },
  inspectImage: { params: z.object({ ref: ImageRef }), result: returns<ImageInfo & { details: Record<string, unknown> }>() },
  removeImage: { params: z.object({ ref: ImageRef }), result: returns<{ removed: string }>() },
  /** Starts a build and returns its task at once; poll `imageTask`, stop it with `cancelImageTask`. */
  buildImage: { params: BuildImageRequest, result: returns<ImageTask>() },
  pullImage: { params: z.object({ ref: ImageRef }), result: returns<ImageTask>() },
  /** Builds (or rebuilds) the VM template of an image and options, as a task; creates then restore from it. */
  buildVmTemplate: { params: BuildVmTemplateRequest, result: returns<ImageTask>() },
  imageTask: { params: z.object({ id: z.string().min(1) }), result: returns<ImageTask>() },
  cancelImageTask: { params: z.object({ id: z.string().min(1) }), result: returns<ImageTask>() },
  /** A sandbox's logs (backend, desktop, the app's own), each saying whether it exists. */
  logSources: { params: OfSandbox, result: returns<LogSourceInfo[]>() },
  /** The last lines of one log (default: the backend's, 200 lines); a source that does not exist is not_found, listing those that do. */
  readLog: { params: LogRequest, result: returns<LogText>() },
  /** A single-use ticket to follow a log: text frames, the last `tail` lines first. */
  logTicket: { params: LogRequest, result: returns<StreamGrant & { source: string }>() },
  /** CPU (percent of one core) and memory of a running sandbox. */
  sandboxStats: { params: OfSandbox, result: returns<SandboxStats>() },
  /** The container engine's state: reachable, version, disk used by images. */
  engineInfo: { params: z.object({}), result: returns<EngineInfo>() },
  // ---- checkpoints (issue 15) ----
  /** Saves the sandbox (disk; with memory: its running state too) and the sessions' cwd records. */
  checkpointSandbox: { params: CheckpointRequest, result: returns<CheckpointResult>() },
  /** Checkpoints, newest first; of one sandbox when given. A broken one is listed with why. */
  listCheckpoints: { params: z.object({ sandbox: SandboxName.optional() }), result: returns<CheckpointInfo[]>() },
  /** Puts the sandbox back to one of its own checkpoints; sessions come back at their cwd, re-measured. */
  restoreSandbox: { params: OfSandbox.extend({ checkpoint: CheckpointId }), result: returns<RestoreResult>() },
  /** New sandboxes from a checkpoint: `as`, or `as-1` … `as-N` with a count. */
  forkSandbox: { params: ForkRequest, result: returns<ForkResult>() },
  removeCheckpoint: { params: z.object({ id: CheckpointId }), result: returns<{ removed: string }>() },
  pauseSandbox: { params: Named, result: returns<SandboxInfo>() },
  resumeSandbox: { params: Named, result: returns<SandboxInfo>() },
  /** A single-use ticket for `/ws/events`, the core's pushed state (add `&since=SEQ&epoch=E` to catch up). */
  eventsTicket: { params: z.object({}), result: returns<StreamGrant>() },
  /** Recent long operations (create, boot, desktop start, image build…) of every process, newest first. */
  listOperations: { params: z.object({ limit: z.number().int().min(1).max(200).optional() }), result: returns<OperationView[]>() },
  /** A folder of the sandbox, anchored at the session's cwd (default: the cwd itself). */
  listFiles: {
    params: z.object({ sandbox: SandboxName, session: SessionKey.optional(), path: SandboxPath('path').optional() }),
    result: returns<FileListing>(),
  },
  makeDirectory: { params: z.object({ ...InFolder, name: EntryName('folder') }), result: returns<{ path: string; cwd: string }>() },
  /**
   * Checks an upload (folder writable, no folder of that name, enough free space) and returns the URL
   * to PUT the bytes to, once; `path` is where the file will be.
   */
  fileUploadTicket: {
    params: z.object({
      ...InFolder,
      name: EntryName('file'),
      size: z.number({ error: 'size is the file length in bytes' }).int().min(0).max(Number.MAX_SAFE_INTEGER),
    }),
    result: returns<FileTransferGrant & { path: string; cwd: string }>(),
  },
  /** Checks a file (there, regular, readable) and returns the URL to GET it from, once. */
  fileDownloadTicket: {
    params: z.object({ sandbox: SandboxName, session: SessionKey.optional(), path: SandboxPath('path') }),
    result: returns<FileTransferGrant & { path: string; name: string; size: number }>(),
  },
  /** Reads the desktop's clipboard, or with `text` sets it (refused while a human holds control). */
  desktopClipboard: {
    params: OfSandbox.extend({ text: z.string().optional() }),
    result: returns<{ text: string; bytes: number }>(),
  },
  /** Changes a sandbox's network policy (live when it runs: takes effect on the next connection); no change: reads it. */
  sandboxNetwork: {
    params: Named.extend({
      mode: NetworkModeSchema.optional(),
      allow: z.array(AllowEntry).max(1000).optional(),
      deny: z.array(AllowEntry).max(1000).optional(),
    }),
    result: returns<NetworkPolicy>(),
  },
  /** The newest connections the sandbox's egress proxy allowed or denied, oldest first. */
  networkLog: { params: OfSandbox.extend({ limit: z.number().int().min(1).max(10_000).optional() }), result: returns<NetworkLogEntry[]>() },
  // ---- replay (issue 16) ----
  /** What is recorded: per sandbox (or one), its screen, terminals, span, size and limit, warnings. */
  replayList: { params: z.object({ sandbox: SandboxName.optional() }), result: returns<{ recordings: ReplayRecording[] }>() },
  /** What happened, on the recording's clock: agent calls with cwd used/observed, commands, actions, leases, checkpoints. */
  replayEvents: {
    params: OfSandbox.extend({ since: ReplayTime('since').optional(), until: ReplayTime('until').optional() }),
    result: returns<{ sandbox: string; startedAt: string | null; endedAt: string | null; events: ReplayEvent[] }>(),
  },
  /** The recorded screen at a time, as an image. */
  replayFrame: {
    params: OfSandbox.extend({
      at: ReplayTime('at'),
      maxWidth: z.number().int().min(16).max(8192).optional(),
      maxHeight: z.number().int().min(16).max(8192).optional(),
      format: z.enum(['png', 'jpeg', 'webp']).optional(),
    }),
    result: returns<ReplayFrame>(),
  },
  /** One terminal's recording, asciicast v2 text. */
  replayCast: { params: OfSandbox.extend({ terminalId: TerminalId }), result: returns<{ cast: string }>() },
  /** Writes a range (default: all) to a folder: screen video, clipped casts, events.jsonl. A tracked operation; one per sandbox at a time. */
  replayExport: {
    params: OfSandbox.extend({
      from: ReplayTime('from').optional(),
      to: ReplayTime('to').optional(),
      out: z.string().min(1, 'out is empty: name a folder to export to').max(4096),
      format: z.enum(['mp4', 'webm']).optional(),
    }),
    result: returns<ReplayExportResult>(),
  },
  /** Removes a sandbox's recording (what is being written now stays). */
  replayRemove: { params: OfSandbox, result: returns<{ removedBytes: number }>() },
} as const;

export type ApiMethod = keyof typeof API;
export type ApiParams<M extends ApiMethod> = z.input<(typeof API)[M]['params']>;
export type ApiResult<M extends ApiMethod> = (typeof API)[M]['result'];

/** What every transport returns: a result, or Sandbox Desk's error as data (never a stack). */
export type ApiResponse<M extends ApiMethod> = { ok: ApiResult<M> } | { error: { code: string; message: string; hint?: string } };

/** The one client interface; the Electron bridge and the browser-mode HTTP client both implement it. */
export interface ApiClient {
  call<M extends ApiMethod>(method: M, params: ApiParams<M>): Promise<ApiResult<M>>;
}
