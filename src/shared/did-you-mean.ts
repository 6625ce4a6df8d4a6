/**
 * "Did you mean …": the known name closest to a typed one, for typos in image and backend names.
 * No Node imports: the renderer uses it too.
 */

/** Edit distance (insert, delete, substitute, swap of neighbours) between two strings. */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/** `name` without a trailing `:latest`, so `foo` and `foo:latest` compare equal. */
const bare = (s: string): string => s.replace(/:latest$/, '');

/**
 * The candidate closest to `typed` when it is close enough to be a typo (at most a third of its last
 * path component's length, and at most 3 edits), else null. An exact match (ignoring `:latest`) is not a suggestion.
 */
export function didYouMean(typed: string, candidates: readonly string[]): string | null {
  const t = bare(typed.trim().toLowerCase());
  if (!t) return null;
  let best: { name: string; d: number } | null = null;
  for (const c of candidates) {
    const b = bare(c.toLowerCase());
    if (b === t) return null;
    // A name given without its repository path ("desktop" for sandbox-desk/desktop) counts as close.
    const d = b.endsWith(`/${t}`) || b.split('/').pop() === t ? 1 : editDistance(t, b);
    if (!best || d < best.d) best = { name: c, d };
  }
  if (!best) return null;
  // Judged on the last path component: a shared repository prefix must not make "nope" close to "base".
  const last = t.split('/').pop() ?? t;
  return best.d <= Math.min(3, Math.max(1, Math.floor(last.length / 3))) ? best.name : null;
}
