/**
 * The core's pushed state: one bus, one vocabulary. Every client — the window (over `/ws/events` or
 * the Electron bridge), `--follow` in the CLI, MCP — learns what changed from these events instead of
 * polling. A module that changes state publishes here; transports only forward.
 *
 * Each event names its `topic`; events about one sandbox carry `sandbox`. A topic is added by adding a
 * member to `CoreEvent` below (with a comment saying who publishes it), never by a free-form string.
 */
import { Emitter, type Event, type IDisposable } from './lifecycle.js';

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

/** A file or folder appeared in a sandbox through the app (an upload, a new folder); a file panel showing its folder re-lists. */
export interface FilesChangedEvent extends Base {
  topic: 'files';
  sandbox: string;
  /** The absolute path in the sandbox that changed. */
  path: string;
  /** Published by src/api/file-transfer-routes.ts (`uploaded`) and the makeDirectory method (`folder`). */
  reason: 'uploaded' | 'folder';
}

export type CoreEvent = SandboxChangedEvent | FilesChangedEvent;

export type CoreEventTopic = CoreEvent['topic'];

/** What a publisher hands the bus: the event without its bookkeeping. */
export type CoreEventInput = CoreEvent extends infer E ? (E extends CoreEvent ? Omit<E, 'at' | 'seq'> & { at?: string } : never) : never;

export class CoreEventBus implements IDisposable {
  private readonly emitter = new Emitter<CoreEvent>();
  private seq = 0;
  readonly onEvent: Event<CoreEvent> = this.emitter.event;

  publish(input: CoreEventInput): CoreEvent {
    const event = { ...input, at: input.at ?? new Date().toISOString(), seq: ++this.seq };
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
