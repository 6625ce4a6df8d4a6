import { useCallback, useEffect, useRef, useState } from 'react';
import type { CoreEvent } from '../../../src/api/contract.js';
import { describeError } from '../app/api-client.js';
import { useEvents, useEventsStatus, usePageHidden } from '../events/events-context.js';

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

export interface LiveOptions {
  /**
   * The events that change this value: with a live event stream the value is re-read when one
   * arrives and never on a timer; the timer runs only while the stream is cut (or absent).
   */
  live?: (e: CoreEvent) => boolean;
}

/** Events closer together than this cause one re-read (a command writes several rows at once). */
const COALESCE_MS = 30;

/**
 * Keeps `fetcher`'s value fresh while `enabled`: re-read on the events `live` names when the event
 * stream is live, else every `intervalMs`. The next call is scheduled only after the previous one
 * settled, so a slow server never sees calls pile up. A hidden page makes no calls at all: it
 * re-reads once when shown again. Changing `key` starts over and ignores answers that were for the
 * old key (a late answer for another sandbox must not show here).
 */
export function usePoll<T>(fetcher: () => Promise<T>, intervalMs: number, key: string, enabled = true, opts: LiveOptions = {}): Poll<T> {
  const [state, setState] = useState<{ key: string; data: T | undefined; error: Poll<T>['error']; loading: boolean }>({
    key,
    data: undefined,
    error: null,
    loading: true,
  });
  const events = useEvents();
  const status = useEventsStatus();
  const hidden = usePageHidden();
  const latestFetcher = useRef(fetcher);
  latestFetcher.current = fetcher;
  const liveFilter = useRef(opts.live);
  liveFilter.current = opts.live;
  const generation = useRef(0);
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const inFlight = useRef<Promise<void> | null>(null);
  const active = useRef(enabled);
  active.current = enabled;
  // Pushed: the stream is live and this value has its events; then no timer.
  const pushed = useRef(false);
  pushed.current = status === 'live' && opts.live !== undefined;
  const hiddenRef = useRef(hidden);
  hiddenRef.current = hidden;

  const run = useCallback(async (): Promise<void> => {
    const gen = generation.current;
    if (timer.current) clearTimeout(timer.current);
    timer.current = null;
    if (hiddenRef.current) return; // shown again: the visibility effect re-reads
    try {
      const data = await latestFetcher.current();
      if (gen === generation.current) setState({ key, data, error: null, loading: false });
    } catch (err) {
      if (gen === generation.current)
        setState((s) => ({ key, data: s.key === key ? s.data : undefined, error: describeError(err), loading: false }));
    }
    if (gen === generation.current && active.current && !pushed.current && !hiddenRef.current)
      timer.current = setTimeout(() => void tick(), intervalMs);
    // `tick` wraps this `run` (declared below, same render): listing it would be a cycle.
    // eslint-disable-next-line react-hooks/exhaustive-deps
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

  // (Re)start: on mount, a new key, enabled, shown again, and whenever the stream goes live or is cut
  // (live: catch up once; cut: the timer takes over until it is back).
  const mode = hidden ? 'hidden' : status === 'live' && opts.live ? 'pushed' : 'polled';
  useEffect(() => {
    if (!enabled || mode === 'hidden') return;
    generation.current += 1;
    void tick();
    return () => {
      generation.current += 1;
      if (timer.current) clearTimeout(timer.current);
      timer.current = null;
    };
  }, [tick, enabled, mode]);

  // Pushed state: the events that touch this value (coalesced), and a resync re-reads everything.
  useEffect(() => {
    if (!events || !enabled) return;
    let pending: ReturnType<typeof setTimeout> | null = null;
    const soon = () => {
      if (pending || hiddenRef.current) return;
      pending = setTimeout(() => {
        pending = null;
        void tick();
      }, COALESCE_MS);
    };
    const offEvent = events.onEvent((e) => {
      const f = liveFilter.current;
      if (f && (e.topic === 'store' || f(e))) soon();
    });
    const offResync = events.onResync(soon);
    return () => {
      offEvent();
      offResync();
      if (pending) clearTimeout(pending);
    };
  }, [events, enabled, tick]);

  const current = state.key === key ? state : { key, data: undefined, error: null, loading: true };
  return { data: current.data, error: current.error, loading: current.loading, refresh: tick };
}
