import type { CoreEventBus } from '../shared/core-events.js';
import { DisposableStore, toDisposable, type IDisposable } from '../shared/lifecycle.js';
import type { SandboxProvider } from '../sandbox/provider.js';

export interface EngineWatchOptions {
  bus: CoreEventBus;
  /** The providers to follow (read when listening starts: plugins may have loaded since). */
  providers: () => Promise<SandboxProvider[]>;
  /** Labels that mark this data directory's resources (io.sandbox-desk.instance). */
  labels: Record<string, string>;
  /** Sandbox names by backend and by backend ref, from the store (a Docker event names a container id). */
  sandboxOf: (backend: string, ref: string | null, labelled: string | null) => string | null;
  sandboxesOf: (backend: string) => string[];
}

/**
 * The engines' own feeds (Docker events…) as `sandbox` and `engine` events — only while a client
 * listens, since a feed is a live connection to the engine. A provider without `watch` is simply not
 * followed (its state changes made through the app are published by the app itself).
 */
export class EngineWatch implements IDisposable {
  private readonly store = new DisposableStore();
  private feeds: DisposableStore | null = null;

  constructor(private readonly opts: EngineWatchOptions) {
    this.store.add(opts.bus.onListening((on) => (on ? void this.start() : this.stop())));
    if (opts.bus.listened) void this.start();
    this.store.add(toDisposable(() => this.stop()));
  }

  private async start(): Promise<void> {
    if (this.feeds) return;
    const feeds = (this.feeds = new DisposableStore());
    const providers = await this.opts.providers().catch(() => [] as SandboxProvider[]);
    if (feeds.isDisposed) return;
    const { bus } = this.opts;
    for (const p of providers) {
      if (!p.watch) continue;
      feeds.add(
        p.watch(this.opts.labels, {
          changed: (c) => {
            const sandbox = this.opts.sandboxOf(p.name, c.backendRef, c.sandbox);
            if (sandbox) bus.publish({ topic: 'sandbox', sandbox, reason: `engine:${c.action}` });
          },
          engine: (reachable, detail) => {
            bus.publish({ topic: 'engine', backend: p.name, reachable, detail });
            // Every sandbox of that backend reads differently now: unavailable, or back.
            for (const sandbox of this.opts.sandboxesOf(p.name))
              bus.publish({ topic: 'sandbox', sandbox, reason: reachable ? 'engine back' : 'engine gone' });
          },
        }),
      );
    }
  }

  private stop(): void {
    this.feeds?.dispose();
    this.feeds = null;
  }

  dispose(): void {
    this.store.dispose();
  }
}
