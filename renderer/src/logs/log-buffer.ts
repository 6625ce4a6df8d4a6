/**
 * What the Logs tab keeps of a followed log: the newest text, bounded (a chatty container followed for
 * hours must not grow the window's memory), cut at a line boundary; and the search over it.
 */
export const LOG_MAX_CHARS = 512 * 1024;

/** `text` + `more`, keeping at most `max` characters: the oldest whole lines go first. */
export function appendBounded(text: string, more: string, max = LOG_MAX_CHARS): { text: string; dropped: boolean } {
  const all = text + more;
  if (all.length <= max) return { text: all, dropped: false };
  const cut = all.length - max;
  const nl = all.indexOf('\n', cut);
  return { text: nl === -1 ? all.slice(cut) : all.slice(nl + 1), dropped: true };
}

export interface Match {
  start: number;
  end: number;
}

/** Every case-insensitive occurrence of `query` (none for an empty query), at most `limit`. */
export function findMatches(text: string, query: string, limit = 10_000): Match[] {
  if (!query) return [];
  const hay = text.toLowerCase();
  const needle = query.toLowerCase();
  const out: Match[] = [];
  for (let at = hay.indexOf(needle); at !== -1 && out.length < limit; at = hay.indexOf(needle, at + needle.length)) {
    out.push({ start: at, end: at + needle.length });
  }
  return out;
}

/** The text cut into plain and matched pieces, for rendering with highlights. */
export function segments(text: string, matches: Match[]): Array<{ text: string; match: number | null }> {
  const out: Array<{ text: string; match: number | null }> = [];
  let at = 0;
  matches.forEach((m, i) => {
    if (m.start > at) out.push({ text: text.slice(at, m.start), match: null });
    out.push({ text: text.slice(m.start, m.end), match: i });
    at = m.end;
  });
  if (at < text.length) out.push({ text: text.slice(at), match: null });
  return out;
}

/** The next (or previous) match index, wrapping; -1 when there are none. */
export function stepMatch(current: number, count: number, dir: 1 | -1): number {
  if (count === 0) return -1;
  if (current < 0) return dir === 1 ? 0 : count - 1;
  return (current + dir + count) % count;
}
