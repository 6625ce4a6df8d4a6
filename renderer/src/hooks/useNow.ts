import { useSyncExternalStore } from 'react';

/**
 * One clock for every relative time label ("41 s ago"): a single 1 s interval while at least one
 * label is on screen, stopped when none is. Labels computed once at render froze ("41 s ago" for
 * minutes); an interval per label would be dozens of timers in a long table.
 */
const TICK_MS = 1000;
const listeners = new Set<() => void>();
let timer: ReturnType<typeof setInterval> | null = null;
let now = Date.now();

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  if (timer === null) {
    now = Date.now();
    timer = setInterval(() => {
      now = Date.now();
      for (const l of listeners) l();
    }, TICK_MS);
  }
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0 && timer !== null) {
      clearInterval(timer);
      timer = null;
    }
  };
}

/** The shared clock's time (ms), re-rendering the caller every second. */
export function useNow(): number {
  return useSyncExternalStore(subscribe, () => now);
}

/** How many components the shared clock is ticking for (a test reads it: one timer, many labels). */
export function clockListeners(): number {
  return listeners.size;
}
