import type { ProviderWatchListener } from '../provider.js';
import type { IDisposable } from '../../shared/lifecycle.js';

/** Container actions that change what the list shows (not exec_*, attach, top…). */
const STATE_ACTIONS = new Set(['create', 'start', 'restart', 'stop', 'die', 'kill', 'pause', 'unpause', 'destroy', 'oom', 'rename']);

/** Reconnect pauses after the engine went away: quick at first (a restart), then at most every 10 s. */
const BACKOFF_MS = [250, 500, 1000, 2000, 5000, 10_000];

interface DockerEvent {
  Type?: string;
  Action?: string;
  status?: string;
  id?: string;
  Actor?: { ID?: string; Attributes?: Record<string, string> };
}

/** Opens the engine's event stream (dockerode `getEvents`), filtered to our labels. */
export type OpenEvents = (labels: Record<string, string>) => Promise<NodeJS.ReadableStream>;

/**
 * Follows `docker events` for our containers and reports each state change, reconnecting with
 * backoff when the engine goes away (a dockerd restart) and saying so both ways, so the list marks
 * the sandboxes unavailable and then reads them again — without anyone polling.
 */
export class DockerEventFeed implements IDisposable {
  private stream: NodeJS.ReadableStream | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private attempt = 0;
  private reachable: boolean | null = null;
  private disposed = false;

  constructor(
    private readonly open: OpenEvents,
    private readonly labels: Record<string, string>,
    private readonly listener: ProviderWatchListener,
    private readonly backoff: readonly number[] = BACKOFF_MS,
  ) {
    void this.connect();
  }

  private async connect(): Promise<void> {
    if (this.disposed) return;
    let stream: NodeJS.ReadableStream;
    try {
      stream = await this.open(this.labels);
    } catch (err) {
      return this.lost(err instanceof Error ? err.message : String(err));
    }
    if (this.disposed) return destroy(stream);
    this.stream = stream;
    this.attempt = 0;
    if (this.reachable !== true) {
      // Back (or first contact): what changed while it was away is unknown, so everything is re-read.
      const wasDown = this.reachable === false;
      this.reachable = true;
      if (wasDown) this.listener.engine(true, null);
    }
    let buf = '';
    stream.on('data', (chunk: Buffer | string) => {
      buf += chunk.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (line) this.line(line);
      }
    });
    const ended = (why: string) => {
      if (this.stream !== stream) return;
      this.stream = null;
      this.lost(why);
    };
    stream.on('end', () => ended('the Docker engine closed its event stream'));
    stream.on('close', () => ended('the Docker engine closed its event stream'));
    stream.on('error', (err: Error) => ended(err.message));
  }

  private line(line: string): void {
    let e: DockerEvent;
    try {
      e = JSON.parse(line) as DockerEvent;
    } catch {
      return;
    }
    const action = (e.Action ?? e.status ?? '').split(':')[0]!;
    if ((e.Type ?? 'container') !== 'container' || !STATE_ACTIONS.has(action)) return;
    this.listener.changed({
      sandbox: e.Actor?.Attributes?.['io.sandbox-desk.sandbox'] ?? null,
      backendRef: e.Actor?.ID ?? e.id ?? null,
      action,
    });
  }

  private lost(detail: string): void {
    if (this.disposed) return;
    if (this.reachable !== false) {
      this.reachable = false;
      this.listener.engine(false, detail);
    }
    const pause = this.backoff[Math.min(this.attempt++, this.backoff.length - 1)]!;
    this.timer = setTimeout(() => void this.connect(), pause);
    this.timer.unref?.();
  }

  dispose(): void {
    this.disposed = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.stream) destroy(this.stream);
    this.stream = null;
  }
}

function destroy(s: NodeJS.ReadableStream): void {
  (s as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
}
