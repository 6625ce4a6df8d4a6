/**
 * The core's pushed state: one bus, one vocabulary. Every client — the window (over `/ws/events` or
 * the Electron bridge), `--follow` in the CLI, MCP — learns what changed from these events instead of
 * polling. A module that changes state publishes here; transports only forward.
 *
 * Each event names its `topic`; events about one sandbox carry `sandbox`. A topic is added by adding a
 * member to `CoreEvent` below (with a comment saying who publishes it), never by a free-form string.
 */
import { Emitter, type Event, type IDisposable } from './lifecycle.js';
import type { NetworkLogEntry, NetworkPolicy } from './network-policy.js';
import type { AgentActionView, AgentRefusalView } from './desktop-types.js';

interface Base {
  /** When it happened (ISO 8601), filled in by the bus when the publisher leaves it out. */
  at: string;
  /** Monotonic per bus; a client that reconnects asks for what came after the last one it saw. */
  seq: number;
  /** Set when the event was made by another process on the same data directory (src/api/event-relay.ts). */
  remote?: boolean;
}

/** Something about the sandbox's record or backend state changed; the client re-reads it. */
export interface SandboxChangedEvent extends Base {
  topic: 'sandbox';
  sandbox: string;
  /** Why, for logs and tests: e.g. `created`, `started`, `stopped`, `removed`, `engine`. */
  reason: string;
}

/**
 * A sandbox's CPU and memory, every 2 s while a client watches (published by src/api/stats-service.ts,
 * started by `desk.stats.watch()` — the events transport calls it while someone subscribes to `stats`).
 */
export interface StatsEvent extends Base {
  topic: 'stats';
  sandbox: string;
  /** Percent of one core since the previous reading. */
  cpuPercent: number;
  memoryBytes: number;
  memoryLimitBytes: number | null;
  /** As SandboxStats.memoryOf (src/shared/observability-types.ts). */
  memoryOf?: 'vm-process';
}

/**
 * A checkpoint's life: `saving` (with the step), then `ready`, `failed` or `removed`. A restore of
 * `sandbox` from it: `restoring`, then `restored` or `failed`; a fork of `sandbox` from it: `forking`,
 * then `forked` or `failed` (a replay shows these as events). Published by src/api/checkpoint-service.ts.
 */
export interface CheckpointEvent extends Base {
  topic: 'checkpoint';
  sandbox: string;
  checkpoint: string;
  phase: 'saving' | 'ready' | 'failed' | 'removed' | 'restoring' | 'restored' | 'forking' | 'forked';
  /** The step's message while saving, the error when failed, the forks' names when forking and forked. */
  message?: string;
}

/** A session's record changed (its cwd, warnings, a new or removed session). Publisher: src/api/store-events.ts. */
export interface SessionChangedEvent extends Base {
  topic: 'session';
  sandbox: string;
  /** The raw session key; null when several changed at once (a sandbox's sessions were removed). */
  session: string | null;
}

/** A call-log entry was appended. Publisher: src/api/store-events.ts. */
export interface CallLogEvent extends Base {
  topic: 'callLog';
  sandbox: string | null;
  session: string | null;
}

/** The desktop's control lease changed hands. Publisher: src/api/store-events.ts. */
export interface LeaseChangedEvent extends Base {
  topic: 'lease';
  sandbox: string;
}

/**
 * A desktop was started or stopped (or failed to), resized, or died inside its sandbox. Publisher:
 * src/api/desktop-events.ts (from DesktopService.onStatusChanged).
 */
export interface DesktopChangedEvent extends Base {
  topic: 'desktop';
  sandbox: string;
  running: boolean | null;
  /** What happened, when known; `crashed`: it ended without being asked to (Xvnc killed, the launcher gone). */
  cause?: 'started' | 'stopped' | 'crashed' | 'resized';
}

/** What a long operation looks like on the wire; persisted (src/store/operation-store.ts). */
export interface OperationView {
  /** Unique across processes (random). */
  id: string;
  /** create, start, stop, desktop-start, image-build, image-pull, checkpoint…: any string. */
  kind: string;
  /** What it works on: a sandbox name, an image tag. */
  target: string;
  /** The sandbox it concerns, if any. */
  sandbox: string | null;
  state: 'running' | 'succeeded' | 'failed' | 'cancelled';
  /** The latest step's message. */
  message: string | null;
  /** 0..1 when the worker can tell, else null. */
  fraction: number | null;
  error: string | null;
  startedAt: string;
  updatedAt: string;
  /** The OS process that runs it (the window's core, a CLI, an MCP server). */
  pid: number;
}

/** A long operation started, made progress or ended. Publisher: src/api/operation-tracker.ts. */
export interface OperationEvent extends Base {
  topic: 'operation';
  operation: OperationView;
}

/**
 * Another process changed the database in a way no journalled event describes (e.g. an older build):
 * the client re-reads everything. Publisher: src/api/event-relay.ts.
 */
export interface StoreChangedEvent extends Base {
  topic: 'store';
  reason: string;
}

/** A backend's engine went away or came back (Docker restarted). Publisher: src/api/engine-watch.ts. */
export interface EngineEvent extends Base {
  topic: 'engine';
  backend: string;
  reachable: boolean;
  detail: string | null;
}

/** A plugin's status changed (loaded, failed, its isolated host crashed). Publisher: src/api/plugin-status-watch.ts. */
export interface PluginStatusEvent extends Base {
  topic: 'plugin';
  plugin: string;
  status: string;
  error: string | null;
}

export type CoreEvent =
  | PluginStatusEvent
  | SandboxChangedEvent
  | SessionChangedEvent
  | CallLogEvent
  | LeaseChangedEvent
  | DesktopChangedEvent
  | OperationEvent
  | StoreChangedEvent
  | EngineEvent
  | StatsEvent
  | CheckpointEvent
  | FilesChangedEvent
  | NetworkEvent
  | AgentActionEvent
  | AgentRefusedEvent
  | ReplayChangedEvent
  | PoolChangedEvent;

/** A warm pool's counts or state changed (a fill, a claim, a setting; issue 37). Publisher: src/pool/warm-pools.ts via SandboxDesk. */
export interface PoolChangedEvent extends Base {
  topic: 'pool';
}
/** A file or folder appeared in a sandbox through the app (an upload, a new folder); a file panel showing its folder re-lists. */
export interface FilesChangedEvent extends Base {
  topic: 'files';
  sandbox: string;
  /** The absolute path in the sandbox that changed. */
  path: string;
  /** Published by src/api/file-transfer-routes.ts (`uploaded`) and the makeDirectory method (`folder`). */
  reason: 'uploaded' | 'folder';
}

/**
 * The network of a sandbox: one connection its egress proxy allowed or denied (`connection`), its
 * policy changed (`policy`), or the egress proxy died and was restarted (`proxy-restarted`: until then
 * the sandbox had no network at all — it fails closed). Published by NetworkService
 * (src/api/network-service.ts) from the proxy's per-sandbox log and from policy changes.
 */
export interface NetworkEvent extends Base {
  topic: 'network';
  sandbox: string;
  kind: 'connection' | 'policy' | 'proxy-restarted';
  /** For `connection`: the log line (src/shared/network-policy.ts NetworkLogEntry). */
  entry?: NetworkLogEntry;
  /** For `policy`: the policy now in force. */
  policy?: NetworkPolicy;
  /** For `proxy-restarted`: what happened, in words. */
  message?: string;
}

/**
 * An agent acted on a desktop (click, type, key…): its last action is there to show for a few
 * seconds (desktopLastAction). Publisher: src/api/desktop-events.ts, in the process that acted.
 */
export interface AgentActionEvent extends Base {
  topic: 'agentAction';
  sandbox: string;
  /**
   * What it was and where it landed, without the frame's image: the live view draws each click at its
   * point as it happens (no round trip, none lost to a quick second click). Absent from older cores.
   */
  action?: Pick<AgentActionView, 'at' | 'kind' | 'target' | 'screen' | 'session'>;
}

/**
 * An agent action was refused because a person holds control (human_has_control): the person's window
 * says so on the screen. Carries the refusal itself (there is nothing to re-read). Publisher:
 * src/api/desktop-events.ts (from DesktopService.onActionRefused), in the process that refused; the
 * event relay brings it to the window from an MCP server or a CLI.
 */
export interface AgentRefusedEvent extends Base {
  topic: 'agentRefused';
  sandbox: string;
  refusal: AgentRefusalView;
}

/**
 * A sandbox's recording changed: a recording (screen or terminal) started or stopped, it was
 * trimmed to its size limit, removed, or a recorder stopped with a warning; the replay view re-reads
 * it. Publisher: src/api/replay-wiring.ts (also for the desktop's screen recorder, via
 * DesktopService.onRecordingChanged).
 */
export interface ReplayChangedEvent extends Base {
  topic: 'replay';
  sandbox: string;
}

export type CoreEventTopic = CoreEvent['topic'];

/** What a publisher hands the bus: the event without its bookkeeping. */
export type CoreEventInput = CoreEvent extends infer E ? (E extends CoreEvent ? Omit<E, 'at' | 'seq'> & { at?: string } : never) : never;

/** Events kept for clients that reconnect (`since`); one that was away longer re-reads everything. */
export const BACKLOG_SIZE = 1000;

export class CoreEventBus implements IDisposable {
  private readonly emitter = new Emitter<CoreEvent>();
  private seq = 0;
  private readonly backlog: CoreEvent[] = [];
  /** Who is listening through a transport (see `listen`); feeds that cost something run only then. */
  private listeners = 0;
  private readonly listening = new Emitter<boolean>();
  readonly onEvent: Event<CoreEvent> = this.emitter.event;
  /** Fires true when the first transport listener arrives, false when the last one leaves. */
  readonly onListening: Event<boolean> = this.listening.event;
  /**
   * This bus's lifetime: seqs restart with a new core, so a client that reconnects with `since` from
   * another epoch (the server restarted) must re-read everything instead.
   */
  readonly epoch = Math.random().toString(36).slice(2, 10);

  constructor(private readonly backlogSize = BACKLOG_SIZE) {}

  publish(input: CoreEventInput): CoreEvent {
    const event: CoreEvent = { ...input, at: input.at ?? new Date().toISOString(), seq: ++this.seq };
    this.backlog.push(event);
    if (this.backlog.length > this.backlogSize) this.backlog.splice(0, this.backlog.length - this.backlogSize);
    this.emitter.fire(event);
    return event;
  }

  /**
   * The events after `seq`, oldest first; null when they are no longer all here (the client then
   * re-reads its state): `seq` older than the backlog, or newer than anything this bus published.
   */
  since(seq: number): CoreEvent[] | null {
    if (seq > this.seq || seq < 0) return null;
    if (seq === this.seq) return [];
    const first = this.backlog[0];
    if (!first || first.seq > seq + 1) return null;
    return this.backlog.slice(seq + 1 - first.seq);
  }

  /** A transport's client: while any is listening, the costly feeds (engine events, the relay) run. */
  listen(): IDisposable {
    if (++this.listeners === 1) this.listening.fire(true);
    let done = false;
    return {
      dispose: () => {
        if (done) return;
        done = true;
        if (--this.listeners === 0) this.listening.fire(false);
      },
    };
  }

  get listened(): boolean {
    return this.listeners > 0;
  }

  /** The seq of the last event published (0 before the first). */
  get lastSeq(): number {
    return this.seq;
  }

  dispose(): void {
    this.emitter.dispose();
    this.listening.dispose();
  }
}
