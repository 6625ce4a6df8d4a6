import { useEffect, useState } from 'react';
import type { SandboxStats } from '../../../src/api/contract.js';
import { useApi } from '../app/api-context.js';
import { useEvents, useEventsStatus } from '../events/events-context.js';
import { usePageVisible } from './usePageVisible.js';

export const STATS_POINTS = 30;
export const STATS_POLL_MS = 2000;

export interface StatsHistory {
  latest: SandboxStats | null;
  /** CPU percent, oldest first, at most STATS_POINTS. */
  cpu: number[];
  memory: number[];
  error: string | null;
}

/**
 * A running sandbox's CPU and memory, every 2 s while shown and while the page is visible (a hidden
 * window asks nothing). With the event stream live the core pushes them (`stats` events, sampled while
 * a window listens); only without it (or while it reconnects) does this poll `sandboxStats`. The
 * history lives here, per sandbox and mount.
 */
export function useSandboxStats(sandbox: string, enabled: boolean): StatsHistory {
  const api = useApi();
  const pageVisible = usePageVisible();
  const [h, setH] = useState<StatsHistory & { sandbox: string }>({ sandbox, latest: null, cpu: [], memory: [], error: null });
  const on = enabled && pageVisible;
  const events = useEvents();
  const pushed = useEventsStatus() === 'live';
  const add = (s: SandboxStats) =>
    setH((prev) => {
      const base = prev.sandbox === sandbox ? prev : { sandbox, latest: null, cpu: [], memory: [], error: null };
      return {
        sandbox,
        latest: s,
        cpu: [...base.cpu, s.cpuPercent].slice(-STATS_POINTS),
        memory: [...base.memory, s.memoryBytes].slice(-STATS_POINTS),
        error: null,
      };
    });
  useEffect(() => {
    if (!on || !pushed || !events) return;
    return events.onEvent((e) => {
      if (e.topic === 'stats' && e.sandbox === sandbox) add({ ...e });
    });
    // eslint-disable-next-line react-hooks/exhaustive-deps -- add only closes over sandbox, a dependency
  }, [events, sandbox, on, pushed]);
  useEffect(() => {
    if (!on || pushed) return;
    let alive = true;
    let timer: ReturnType<typeof setTimeout> | null = null;
    const tick = async () => {
      try {
        const s = await api.call('sandboxStats', { sandbox });
        if (!alive) return;
        add(s);
      } catch (err) {
        if (!alive) return;
        setH((prev) => ({
          ...(prev.sandbox === sandbox ? prev : { cpu: [], memory: [], latest: null }),
          sandbox,
          error: String((err as Error).message ?? err),
        }));
      }
      if (alive) timer = setTimeout(() => void tick(), STATS_POLL_MS);
    };
    void tick();
    return () => {
      alive = false;
      if (timer) clearTimeout(timer);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- add only closes over sandbox, a dependency
  }, [api, sandbox, on, pushed]);
  return h.sandbox === sandbox ? h : { latest: null, cpu: [], memory: [], error: null };
}
