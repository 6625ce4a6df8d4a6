import { DisposableStore, Emitter, type Event, type IDisposable } from '../shared/lifecycle.js';
import { framebufferUpdateRequest } from './rfb/client-messages.js';
import { RfbClient, type ByteTransport } from './rfb/rfb-client.js';

/**
 * What changed about a desktop, as DesktopService tells it (`onStatusChanged`): a start beginning
 * and its outcome, a stop, a resize, and a desktop that ended without being asked to (Xvnc killed,
 * the launcher gone) — `crashed` — or was stopped by another process — `stopped`.
 */
export type DesktopStatusChange =
  | { sandbox: string; cause: 'starting'; running: null }
  | { sandbox: string; cause: 'started'; running: boolean; reason: string | null }
  | { sandbox: string; cause: 'start-failed' | 'stop-failed'; running: null; error: unknown }
  | { sandbox: string; cause: 'stopped' | 'crashed'; running: false; reason: string | null }
  | { sandbox: string; cause: 'resized'; running: true; width: number; height: number };

/** How a watched desktop's RFB socket came to close, as a probe inside the sandbox says afterwards. */
export interface DesktopAfterClose {
  /** The desktop is up after all (the server closed only this connection): watch it again. */
  running: boolean;
  /** Its directory is still there: it was not stopped (a stop removes it), so it died. */
  dirExists: boolean;
  /** What the launcher wrote to its `failed` file, if anything. */
  failed: string | null;
}

export interface DesktopWatchHost {
  /** A new byte pipe to the desktop's RFB socket (the same relay a viewer gets). */
  open(sandbox: string): Promise<ByteTransport & IDisposable>;
  /** One probe inside the sandbox, after the socket closed. */
  probe(sandbox: string): Promise<DesktopAfterClose>;
}

export interface DesktopEnded {
  sandbox: string;
  how: 'crashed' | 'stopped';
  detail: string;
}

/** How often in a row the socket may close while the probe still finds the desktop up, before the watch gives up. */
const MAX_REWATCH = 3;
/** The handshake through a `docker exec` relay on a loaded machine (see LIVE_CONNECT_TIMEOUT_MS). */
const CONNECT_TIMEOUT_MS = 60_000;

/**
 * Notices, without polling, a desktop ending inside its sandbox and its screen changing size: one
 * idle RFB connection per running desktop. Its only outstanding request is an incremental update of
 * the top-left pixel, so Xvnc sends next to nothing while the screen animates, yet it must send the
 * DesktopSize/ExtendedDesktopSize rect when the screen is resized (by any client, or xrandr), and its
 * socket reaching EOF is the honest signal that Xvnc is gone. A probe then tells a stop made by
 * another process (the desktop's directory removed) from a death (the directory still there).
 */
export class DesktopWatch implements IDisposable {
  private readonly watches = new Map<string, DisposableStore>();
  private readonly endedEmitter = new Emitter<DesktopEnded>();
  private readonly resizedEmitter = new Emitter<{ sandbox: string; width: number; height: number }>();
  readonly onEnded: Event<DesktopEnded> = this.endedEmitter.event;
  readonly onResized: Event<{ sandbox: string; width: number; height: number }> = this.resizedEmitter.event;
  private disposed = false;

  constructor(private readonly host: DesktopWatchHost) {}

  watching(sandbox: string): boolean {
    return this.watches.has(sandbox);
  }

  /** Starts watching a desktop known to run (idempotent); a desktop that cannot be reached is not watched. */
  watch(sandbox: string, rewatch = 0): void {
    if (this.disposed || this.watches.has(sandbox)) return;
    const w = new DisposableStore();
    this.watches.set(sandbox, w);
    // A connection that cannot be made is asked about like one that closed: the desktop may have
    // died between the status that said it runs and this connect.
    void this.connect(sandbox, w, rewatch).catch(() => {
      if (w.isDisposed) return;
      this.forget(sandbox, w);
      void this.afterClose(sandbox, rewatch);
    });
  }

  /** Stops watching without telling anyone (this process is stopping the desktop and says so itself). */
  unwatch(sandbox: string): void {
    const w = this.watches.get(sandbox);
    if (w) this.forget(sandbox, w);
  }

  /** Stops every watch (nobody listens any more), telling nothing. */
  unwatchAll(): void {
    for (const [sandbox, w] of [...this.watches]) this.forget(sandbox, w);
  }

  private forget(sandbox: string, w: DisposableStore): void {
    if (this.watches.get(sandbox) === w) this.watches.delete(sandbox);
    w.dispose();
  }

  private async connect(sandbox: string, w: DisposableStore, rewatch: number): Promise<void> {
    const transport = await this.host.open(sandbox);
    if (w.isDisposed) return transport.dispose();
    w.add(transport);
    const client = await RfbClient.connect(transport, { timeoutMs: CONNECT_TIMEOUT_MS });
    if (w.isDisposed) return client.dispose();
    const askForCorner = () => transport.write(framebufferUpdateRequest(true, 1, 1));
    let width = client.width;
    let height = client.height;
    w.add(client.onUpdate(askForCorner));
    w.add(
      client.onResize((size) => {
        if (size.width === width && size.height === height) return;
        ({ width, height } = size);
        this.resizedEmitter.fire({ sandbox, ...size });
      }),
    );
    w.add(
      client.onClose((err) => {
        // undefined: our own close (unwatch, dispose); anything else is the server's side going away.
        if (err === undefined || w.isDisposed) return;
        this.forget(sandbox, w);
        void this.afterClose(sandbox, rewatch);
      }),
    );
    w.add(client);
    askForCorner();
  }

  private async afterClose(sandbox: string, rewatch: number): Promise<void> {
    const after = await this.host.probe(sandbox).catch(() => null);
    if (this.disposed || this.watches.has(sandbox)) return;
    if (after?.running) {
      if (rewatch < MAX_REWATCH) this.watch(sandbox, rewatch + 1);
      return;
    }
    if (!after) {
      this.endedEmitter.fire({ sandbox, how: 'stopped', detail: 'the desktop went away with its sandbox (it could not be probed)' });
    } else if (after.dirExists) {
      const failed = after.failed ? `: ${after.failed}` : '';
      this.endedEmitter.fire({
        sandbox,
        how: 'crashed',
        detail: `Xvnc closed its RFB socket and the desktop is no longer running${failed}`,
      });
    } else {
      this.endedEmitter.fire({ sandbox, how: 'stopped', detail: 'the desktop was stopped (by another process)' });
    }
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const w of this.watches.values()) w.dispose();
    this.watches.clear();
    this.endedEmitter.dispose();
    this.resizedEmitter.dispose();
  }
}
