import { SandboxDeskError } from '../shared/errors.js';
import type { Event, IDisposable } from '../shared/lifecycle.js';
import { CONTROL_WAIT_MAX_MS, type ControlWait, type Lease } from '../shared/lease-types.js';

export type { ControlWait } from '../shared/lease-types.js';

export { CONTROL_WAIT_DEFAULT_MS, CONTROL_WAIT_MAX_MS } from '../shared/lease-types.js';
/**
 * How often a change of hands made by *another* process (the window, while the agent runs `sandbox-desk
 * mcp`) is looked for: one `PRAGMA data_version` (did anyone else write the database?), and only when
 * it moved a re-read of the lease row. The same cadence as the event relay (event-relay.ts, 250 ms).
 */
export const CONTROL_WAIT_POLL_MS = 250;

export interface ControlWaitSource {
  /** The lease in force now, read fresh (a lease that cannot be read reads as a person's: fail closed). */
  read(sandbox: string): Lease;
  /** Changes of hands made by this process (LeaseStore.onChanged): the wait ends at once on a give-back here. */
  onChanged: Event<{ sandbox: string }>;
  /** SQLite's data_version: moves when another connection wrote. Without it only this process's changes end a wait. */
  dataVersion?(): number;
  pollMs?: number;
}

/**
 * Waits until the agent may act on the sandbox's desktop (the lease is not a person's), at most
 * `timeoutMs`. Event-driven: a give-back in this process ends it on the spot; one made by another
 * process is seen within `pollMs` through the database's change counter, without reading rows while
 * nothing was written. Answers (never throws) on a timeout.
 */
export function waitForControl(
  sandbox: string,
  source: ControlWaitSource,
  timeoutMs: number,
  onWaiting?: (lease: Lease) => void,
): Promise<ControlWait> {
  if (!Number.isInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > CONTROL_WAIT_MAX_MS)
    throw new SandboxDeskError(
      'invalid_input',
      `timeout must be a whole number of milliseconds 0–${CONTROL_WAIT_MAX_MS}, got ${String(timeoutMs)}`,
      { hint: 'wait at most 10 minutes at a time; call again to wait longer' },
    );
  const t0 = Date.now();
  const answer = (lease: Lease, timedOut: boolean): ControlWait => ({
    sandbox,
    mayAct: lease.holder !== 'human',
    holder: lease.holder,
    viewerId: lease.viewerId,
    waitedMs: Date.now() - t0,
    timedOut,
    reason: lease.reason,
  });
  const now = source.read(sandbox);
  if (now.holder !== 'human' || timeoutMs === 0) return Promise.resolve(answer(now, now.holder === 'human'));
  return new Promise<ControlWait>((resolve) => {
    const subs: IDisposable[] = [];
    let done = false;
    const finish = (timedOut: boolean) => {
      if (done) return;
      const lease = source.read(sandbox);
      if (!timedOut && lease.holder === 'human') return; // someone else took it over meanwhile: go on waiting
      done = true;
      for (const s of subs) s.dispose();
      resolve(answer(lease, timedOut && lease.holder === 'human'));
    };
    subs.push(source.onChanged((c) => c.sandbox === sandbox && finish(false)));
    const timeout = setTimeout(() => finish(true), timeoutMs);
    subs.push({ dispose: () => clearTimeout(timeout) });
    if (source.dataVersion) {
      const version = source.dataVersion.bind(source);
      let seen = version();
      const poll = setInterval(() => {
        const v = version();
        if (v === seen) return;
        seen = v;
        finish(false);
      }, source.pollMs ?? CONTROL_WAIT_POLL_MS);
      subs.push({ dispose: () => clearInterval(poll) });
    }
    // Said once the wait is listening, so a give-back from now on is seen (the CLI's "waiting…" line).
    onWaiting?.(now);
  });
}
