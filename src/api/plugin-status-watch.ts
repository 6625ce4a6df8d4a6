import type { CoreEventBus } from '../shared/core-events.js';
import { DisposableStore, toDisposable, type IDisposable } from '../shared/lifecycle.js';

/** How often plugin statuses are compared while someone listens (an in-memory read). */
const CHECK_MS = 2000;

export interface PluginStatusWatchOptions {
  bus: CoreEventBus;
  /** Each plugin's status now (PluginLoader's reports: in memory, no I/O). */
  statuses: () => Promise<Array<{ name: string; status: string; error: string | null }>>;
  checkMs?: number;
}

/**
 * Plugin status as events: a plugin that loads late, fails, or whose isolated host crashes for good.
 * The plugin host has no change feed of its own, so its reports are compared — in memory, only while
 * a client listens — and each change is published once, with the sandboxes' list re-read by clients.
 */
export class PluginStatusWatch implements IDisposable {
  private readonly store = new DisposableStore();
  private timer: ReturnType<typeof setInterval> | null = null;
  private last = new Map<string, string>();

  constructor(private readonly opts: PluginStatusWatchOptions) {
    this.store.add(opts.bus.onListening((on) => (on ? this.start() : this.stop())));
    if (opts.bus.listened) this.start();
    this.store.add(toDisposable(() => this.stop()));
  }

  private start(): void {
    if (this.timer) return;
    void this.check(true);
    this.timer = setInterval(() => void this.check(false), this.opts.checkMs ?? CHECK_MS);
    this.timer.unref?.();
  }

  private stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Compares with the last look; the first look only remembers (a new client reads the list itself). */
  async check(first: boolean): Promise<void> {
    const now = await this.opts.statuses().catch(() => null);
    if (!now) return;
    const next = new Map(now.map((p) => [p.name, `${p.status}\u0000${p.error ?? ''}`]));
    if (!first)
      for (const p of now)
        if (this.last.get(p.name) !== next.get(p.name))
          this.opts.bus.publish({ topic: 'plugin', plugin: p.name, status: p.status, error: p.error });
    this.last = next;
  }

  dispose(): void {
    this.store.dispose();
  }
}
