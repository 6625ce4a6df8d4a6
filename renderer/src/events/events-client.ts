import type { ApiClient, CoreEvent, EventFrame } from '../../../src/api/contract.js';

/**
 * connecting: before the first hello; live: events flow (panels stop polling); reconnecting: the
 * stream was cut (panels poll until it is back); off: this transport has no event stream at all.
 */
export type EventsStatus = 'connecting' | 'live' | 'reconnecting' | 'off';

/** Pauses between reconnects: quick at first (a blip), then at most every 5 s. */
export const RECONNECT_BACKOFF_MS = [250, 500, 1000, 2000, 5000];

type Listener<T> = (value: T) => void;

/** What the Electron preload exposes besides `invoke` (main/preload.cts). */
export interface EventBridge {
  /** Whether main forwards the core's events (an in-process core); a child core's window uses the socket. */
  eventsBridged?(): Promise<boolean>;
  onEvent?(listener: (event: unknown) => void): () => void;
}

export interface EventsClientOptions {
  api: ApiClient;
  /** The Electron bridge: when it carries events, no WebSocket is opened. */
  bridge?: EventBridge | undefined;
  /** Injected in tests. */
  WebSocket?: typeof WebSocket;
  backoff?: readonly number[];
  /** Whether the page is hidden (a hidden page makes no requests: it reconnects once shown). */
  hidden?: () => boolean;
  /** Subscribes to visibility changes; returns the unsubscribe. */
  onVisibility?: (fn: () => void) => () => void;
}

/**
 * The window's one link to the core's pushed state: `/ws/events` with a single-use ticket (or the
 * Electron bridge). It remembers the last seq and the bus's epoch, so a reconnect asks only for what
 * it missed; when the core could not serve that (restarted, or away longer than its backlog) it
 * fires `onResync` and every panel re-reads. Cut, it reconnects with backoff — never while the page
 * is hidden.
 */
export class EventsClient {
  status: EventsStatus = 'connecting';
  private ws: WebSocket | null = null;
  private seq = 0;
  private epoch: string | null = null;
  private attempt = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private closed = false;
  private waitingForVisible = false;
  private readonly eventListeners = new Set<Listener<CoreEvent>>();
  private readonly statusListeners = new Set<Listener<EventsStatus>>();
  private readonly resyncListeners = new Set<() => void>();
  private readonly unsubscribe: Array<() => void> = [];

  constructor(private readonly opts: EventsClientOptions) {
    const bridge = opts.bridge;
    if (bridge?.onEvent) {
      void (bridge.eventsBridged?.() ?? Promise.resolve(true)).then(
        (bridged) => (bridged ? this.useBridge(bridge) : this.useSocket()),
        () => this.useSocket(),
      );
      return;
    }
    this.useSocket();
  }

  private useBridge(bridge: EventBridge): void {
    if (this.closed) return;
    this.unsubscribe.push(bridge.onEvent!((e) => this.deliver(e as CoreEvent)));
    this.setStatus('live');
  }

  private useSocket(): void {
    const opts = this.opts;
    if (opts.onVisibility)
      this.unsubscribe.push(
        opts.onVisibility(() => {
          if (this.waitingForVisible && !this.isHidden()) {
            this.waitingForVisible = false;
            void this.connect();
          }
        }),
      );
    void this.connect();
  }

  onEvent(fn: Listener<CoreEvent>): () => void {
    this.eventListeners.add(fn);
    return () => this.eventListeners.delete(fn);
  }

  onStatus(fn: Listener<EventsStatus>): () => void {
    this.statusListeners.add(fn);
    return () => this.statusListeners.delete(fn);
  }

  /** The client may have missed events: re-read everything. */
  onResync(fn: () => void): () => void {
    this.resyncListeners.add(fn);
    return () => this.resyncListeners.delete(fn);
  }

  get lastSeq(): number {
    return this.seq;
  }

  private isHidden(): boolean {
    return this.opts.hidden?.() ?? false;
  }

  private setStatus(s: EventsStatus): void {
    if (this.status === s) return;
    this.status = s;
    for (const l of [...this.statusListeners]) l(s);
  }

  private deliver(e: CoreEvent): void {
    if (typeof e?.seq === 'number') this.seq = e.seq;
    for (const l of [...this.eventListeners]) l(e);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    if (this.isHidden()) {
      this.waitingForVisible = true;
      return;
    }
    let url: string;
    try {
      const grant = await this.opts.api.call('eventsTicket', {});
      url = grant.url;
    } catch (err) {
      // A core that serves no event stream (an older one, a test double): the panels just poll.
      const code = (err as { code?: string }).code;
      if (code === 'unsupported' || code === 'invalid_input') return this.setStatus('off');
      return this.retry();
    }
    if (this.closed) return;
    const q = this.epoch ? `&since=${this.seq}&epoch=${encodeURIComponent(this.epoch)}` : '';
    const Ws = this.opts.WebSocket ?? WebSocket;
    let ws: WebSocket;
    try {
      ws = new Ws(url + q);
    } catch {
      return this.retry();
    }
    this.ws = ws;
    ws.onmessage = (m: MessageEvent) => {
      let f: EventFrame;
      try {
        f = JSON.parse(String(m.data)) as EventFrame;
      } catch {
        return;
      }
      if (f.type === 'hello') {
        // The first hello needs no resync: the panels read their state when the stream goes live.
        const resync = this.epoch !== null && (f.resync || f.epoch !== this.epoch);
        this.epoch = f.epoch;
        this.seq = f.seq;
        this.attempt = 0;
        this.setStatus('live');
        if (resync) for (const l of [...this.resyncListeners]) l();
      } else if (f.type === 'event') this.deliver(f.event);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.retry();
    };
    ws.onerror = () => undefined; // onclose follows
  }

  private retry(): void {
    if (this.closed) return;
    this.setStatus('reconnecting');
    const backoff = this.opts.backoff ?? RECONNECT_BACKOFF_MS;
    const pause = backoff[Math.min(this.attempt++, backoff.length - 1)]!;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.connect(), pause);
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    for (const u of this.unsubscribe.splice(0)) u();
    const ws = this.ws;
    this.ws = null;
    ws?.close();
  }
}

/** The client for this page: the Electron bridge's events when present, else `/ws/events`. */
export function createEventsClient(api: ApiClient): EventsClient {
  const bridge = (window as unknown as { sandboxDesk?: EventBridge }).sandboxDesk;
  return new EventsClient({
    api,
    bridge: bridge?.onEvent ? bridge : undefined,
    hidden: () => document.visibilityState === 'hidden',
    onVisibility: (fn) => {
      document.addEventListener('visibilitychange', fn);
      return () => document.removeEventListener('visibilitychange', fn);
    },
  });
}
