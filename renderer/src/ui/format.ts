/** "12 s ago", "3 min ago", "2 h ago", else the local date: observedAt is about freshness, not calendars. */
export function ago(iso: string | null, now = Date.now()): string {
  if (!iso) return '—';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  return new Date(t).toLocaleString();
}

/** Elapsed seconds for progress text ("Creating… 4 s"). */
export function elapsed(sinceMs: number, now = Date.now()): string {
  return `${Math.max(0, Math.floor((now - sinceMs) / 1000))} s`;
}
