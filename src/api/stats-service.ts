import { SandboxDeskError } from '../shared/errors.js';
import type { CoreEventBus } from '../shared/core-events.js';
import type { IDisposable } from '../shared/lifecycle.js';
import type { EngineInfo, SandboxStats } from '../shared/observability-types.js';
import type { ResourceSample } from '../sandbox/observability.js';
import type { SandboxProvider, SandboxRef } from '../sandbox/provider.js';

export interface StatsHost {
  target(sandbox: string): Promise<{ ref: SandboxRef; provider: SandboxProvider }>;
  /** Every sandbox's name (the periodic publisher samples those running). */
  names(): string[];
  engineInfo(): Promise<EngineInfo>;
  events: CoreEventBus;
}

/** Two readings closer than this are too noisy for a percentage: the second is taken after it. */
const MIN_INTERVAL_MS = 400;
/** A previous reading older than this is not used (the sandbox may have restarted meanwhile). */
const STALE_MS = 60_000;
export const STATS_INTERVAL_MS = 2_000;

/** CPU percent of one core between two readings; null when they do not belong together. */
export function cpuPercent(prev: ResourceSample, next: ResourceSample): number | null {
  const dt = next.atMs - prev.atMs;
  const dc = next.cpuNs - prev.cpuNs;
  if (dt <= 0 || dc < 0) return null;
  return Math.round((dc / (dt * 1e6)) * 1000) / 10;
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * CPU and memory per sandbox: each backend gives cumulative counters (src/sandbox/observability.ts),
 * this turns two readings into a percentage (the previous call's reading, or a second one taken now),
 * and publishes `stats` events every 2 s while at least one client watches (`watch()`), never otherwise.
 */
export class StatsService implements IDisposable {
  private readonly last = new Map<string, ResourceSample>();
  private watchers = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private disposed = false;

  constructor(
    private readonly host: StatsHost,
    private readonly intervalMs = STATS_INTERVAL_MS,
  ) {}

  async sample(sandbox: string): Promise<SandboxStats> {
    const { ref, provider } = await this.host.target(sandbox);
    if (!provider.resources) {
      throw new SandboxDeskError('unsupported', `the ${provider.name} backend does not measure CPU and memory`, {
        hint: 'resource figures exist for the docker and qemu backends',
      });
    }
    const read = async (): Promise<ResourceSample> => {
      const s = await provider.resources!.sample(ref);
      if (!s) {
        this.last.delete(sandbox);
        throw new SandboxDeskError('sandbox_not_running', `sandbox ${sandbox} is not running: nothing to measure`, {
          hint: `start it with \`sandbox-desk sandbox start ${sandbox}\``,
        });
      }
      return s;
    };
    let prev = this.last.get(sandbox);
    let next = await read();
    if (!prev || next.atMs - prev.atMs > STALE_MS || next.cpuNs < prev.cpuNs) prev = undefined;
    if (!prev || next.atMs - prev.atMs < MIN_INTERVAL_MS) {
      prev ??= next;
      await wait(Math.max(0, MIN_INTERVAL_MS - (Date.now() - prev.atMs)) + 50);
      next = await read();
    }
    this.last.set(sandbox, next);
    return {
      sandbox,
      at: new Date(next.atMs).toISOString(),
      cpuPercent: Math.max(0, cpuPercent(prev, next) ?? 0),
      memoryBytes: next.memoryBytes,
      memoryLimitBytes: next.memoryLimitBytes,
      ...(next.memoryOf ? { memoryOf: next.memoryOf } : {}),
    };
  }

  engineInfo(): Promise<EngineInfo> {
    return this.host.engineInfo();
  }

  /**
   * While the returned handle lives, every running sandbox's figures are published as `stats` events
   * every interval. The events transport calls this when a client subscribes to the topic.
   */
  watch(): IDisposable {
    this.watchers += 1;
    if (this.watchers === 1) this.schedule(0);
    let done = false;
    return {
      dispose: () => {
        if (done) return;
        done = true;
        this.watchers -= 1;
        if (this.watchers === 0 && this.timer) {
          clearTimeout(this.timer);
          this.timer = null;
        }
      },
    };
  }

  get watching(): boolean {
    return this.watchers > 0;
  }

  private schedule(ms: number): void {
    if (this.disposed || this.watchers === 0) return;
    this.timer = setTimeout(() => void this.round(), ms);
    this.timer.unref?.();
  }

  /** One round: every sandbox measured on its own, so a slow backend delays only its own event. */
  private async round(): Promise<void> {
    await Promise.allSettled(
      this.host.names().map(async (name) => {
        const s = await this.sample(name);
        if (this.watchers > 0 && !this.disposed) this.host.events.publish({ topic: 'stats', ...s });
      }),
    );
    this.schedule(this.intervalMs);
  }

  dispose(): void {
    this.disposed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
