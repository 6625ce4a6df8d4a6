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

interface Base {
  /** When it happened (ISO 8601), filled in by the bus when the publisher leaves it out. */
  at: string;
  /** Monotonic per bus; a client that reconnects asks for what came after the last one it saw. */
  seq: number;
}

/** Something about the sandbox's record or backend state changed; the client re-reads it. */
export interface SandboxChangedEvent extends Base {
  topic: 'sandbox';
  sandbox: string;
  /** Why, for logs and tests: e.g. `created`, `started`, `stopped`, `removed`, `engine`. */
  reason: string;
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

export type CoreEvent = SandboxChangedEvent | NetworkEvent;

export type CoreEventTopic = CoreEvent['topic'];

/** What a publisher hands the bus: the event without its bookkeeping. */
export type CoreEventInput = CoreEvent extends infer E ? (E extends CoreEvent ? Omit<E, 'at' | 'seq'> & { at?: string } : never) : never;

export class CoreEventBus implements IDisposable {
  private readonly emitter = new Emitter<CoreEvent>();
  private seq = 0;
  readonly onEvent: Event<CoreEvent> = this.emitter.event;

  publish(input: CoreEventInput): CoreEvent {
    const event: CoreEvent = { ...input, at: input.at ?? new Date().toISOString(), seq: ++this.seq };
    this.emitter.fire(event);
    return event;
  }

  /** The seq of the last event published (0 before the first). */
  get lastSeq(): number {
    return this.seq;
  }

  dispose(): void {
    this.emitter.dispose();
  }
}
