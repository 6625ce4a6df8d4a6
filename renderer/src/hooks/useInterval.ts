import { useEffect, useRef } from 'react';

/** Calls `fn` every `ms` while `ms` is not null; always the latest `fn`, so callers need not memoize. */
export function useInterval(fn: () => void, ms: number | null): void {
  const latest = useRef(fn);
  latest.current = fn;
  useEffect(() => {
    if (ms === null) return;
    const id = setInterval(() => latest.current(), ms);
    return () => clearInterval(id);
  }, [ms]);
}
