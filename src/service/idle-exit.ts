import type { ServiceBusy } from '../shared/service-info.js';

/**
 * When an idle service exits: after `idleMs` in a row with no running sandbox, no client connection and
 * no recording. Any of them resets the count. Fed the state and the time, so the rule is tested
 * without a clock.
 */
export class IdleExit {
  private idleSince: number | null = null;

  constructor(readonly idleMs: number) {}

  /** True when the service should exit now. */
  observe(busy: ServiceBusy, now: number): boolean {
    if (busy.runningSandboxes > 0 || busy.clients > 0 || busy.recordings > 0) {
      this.idleSince = null;
      return false;
    }
    this.idleSince ??= now;
    return now - this.idleSince >= this.idleMs;
  }

  /** How often to look: often enough that a short delay (tests: 2 s) is kept, at most every 2 s. */
  get pollMs(): number {
    return Math.max(100, Math.min(2000, Math.floor(this.idleMs / 4)));
  }
}

/** The idle delay: SANDBOX_DESK_SERVICE_IDLE_SECONDS (tests) over config `service.idleExitSeconds`. */
export function idleExitMs(env: NodeJS.ProcessEnv, configuredSeconds: number): number {
  const v = env.SANDBOX_DESK_SERVICE_IDLE_SECONDS;
  if (v !== undefined && v !== '') {
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0)
      throw new Error(`SANDBOX_DESK_SERVICE_IDLE_SECONDS must be a positive number of seconds, got ${JSON.stringify(v)}`);
    return Math.round(n * 1000);
  }
  return configuredSeconds * 1000;
}
