import { useCallback, useEffect, useRef, useState } from 'react';
import { describeError } from '../api-client.js';

export interface Poll<T> {
  /** The last value that arrived (kept while a later call fails, so the UI does not blank out). */
  data: T | undefined;
  /** The last call's failure, cleared by the next success. */
  error: { message: string; hint?: string; code?: string } | null;
  /** true until the first answer (value or error) for the current key. */
  loading: boolean;
  /** Fetch now (e.g. right after an action), then keep the rhythm. */
  refresh: () => Promise<void>;
}

/**
 * Polls `fetcher` every `intervalMs` while `enabled`. The next call is scheduled only after the
 * previous one settled, so a slow server never sees calls pile up. Changing `key` starts over and
 * ignores answers that were for the old key (a late answer for another sandbox must not show here).
 */
export function usePoll<T>(fetcher: () => Promise<T>, intervalMs: number, key: string, enabled = true): Poll<T> {
  const [state, setState] = useState<{ key: string; data: T | undefined; error: Poll<T>['error']; loading: boolean }>({
    key,
    data: undefined,
    error: null,
    loading: true,
  });
  const latestFetcher = useRef(fetcher);
  latestFetcher.current = fetcher;
  const generation = useRef(0);
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const inFlight = useRef<Promise<void> | null>(null);
  const active = useRef(enabled);
  active.current = enabled;

  const run = useCallback(async (): Promise<void> => {
    const gen = generation.current;
    if (timer.current) clearTimeout(timer.current);
    timer.current = null;
    try {
      const data = await latestFetcher.current();
      if (gen === generation.current) setState({ key, data, error: null, loading: false });
    } catch (err) {
      if (gen === generation.current)
        setState((s) => ({ key, data: s.key === key ? s.data : undefined, error: describeError(err), loading: false }));
    }
    if (gen === generation.current && active.current) timer.current = setTimeout(() => void tick(), intervalMs);
  }, [key, intervalMs]);

  // One call at a time: a refresh during a call waits for it, then runs once more.
  const tick = useCallback(async (): Promise<void> => {
    if (inFlight.current) await inFlight.current;
    const p = run();
    inFlight.current = p;
    try {
      await p;
    } finally {
      if (inFlight.current === p) inFlight.current = null;
    }
  }, [run]);

  useEffect(() => {
    if (!enabled) return;
    generation.current += 1;
    void tick();
    return () => {
      generation.current += 1;
      if (timer.current) clearTimeout(timer.current);
      timer.current = null;
    };
  }, [tick, enabled]);

  const current = state.key === key ? state : { key, data: undefined, error: null, loading: true };
  return { data: current.data, error: current.error, loading: current.loading, refresh: tick };
}
