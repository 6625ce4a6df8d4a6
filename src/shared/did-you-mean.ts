/**
 * "Did you mean …?" for every name a user types: backends, commands, options, sandbox names, config
 * keys. One helper so every message reads the same way.
 *
 * The distance is Damerau–Levenshtein in its optimal-string-alignment form (an adjacent swap, `dokcer`
 * for `docker`, costs 1), which is what commander uses for its own suggestions too.
 */

/** Edits (insert, delete, substitute, swap two adjacent characters) that turn `a` into `b`. */
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

/**
 * The candidates nearest to `typed` (all those at the smallest distance), closest first, or [] when
 * none is near enough to be a typo: at most a third of the longer word's length, and at least one edit
 * allowed. Case is ignored for the distance. A candidate `typed` is a prefix of counts as near too
 * (`sandbox ins` → inspect).
 */
export function nearestNames(typed: string, candidates: Iterable<string>): string[] {
  const t = typed.toLowerCase();
  if (t === '') return [];
  let best = Infinity;
  let near: string[] = [];
  for (const c of new Set(candidates)) {
    const lc = c.toLowerCase();
    if (lc === t) return [c];
    const dist = lc.startsWith(t) && t.length >= 2 ? 0.5 : editDistance(t, lc);
    const allowed = Math.max(1, Math.floor(Math.max(t.length, lc.length) / 3));
    if (dist > allowed) continue;
    if (dist < best) [best, near] = [dist, [c]];
    else if (dist === best) near.push(c);
  }
  return near;
}

/** "did you mean docker?" / "did you mean list or ls?", or undefined when nothing is near. */
export function didYouMean(typed: string, candidates: Iterable<string>): string | undefined {
  const near = nearestNames(typed, candidates);
  if (near.length === 0) return undefined;
  const shown = near.slice(0, 3);
  return `did you mean ${shown.length === 1 ? shown[0] : `${shown.slice(0, -1).join(', ')} or ${shown.at(-1)}`}?`;
}

/**
 * A hint for an unknown name: the suggestion when there is one, then what the valid names are
 * (`what`: "available backends"), so the message always says what to do.
 */
export function unknownNameHint(typed: string, candidates: readonly string[], what: string): string {
  const guess = didYouMean(typed, candidates);
  const all = candidates.length ? `${what}: ${candidates.join(', ')}` : `there are no ${what.replace(/^available /, '')} yet`;
  return guess ? `${guess} (${all})` : all;
}

/** `name` without a trailing `:latest`, so `foo` and `foo:latest` compare equal. */
const bareImage = (s: string): string => s.replace(/:latest$/, '');

/**
 * The image reference closest to `typed` when it is close enough to be a typo, else null. Image names
 * need their own rule: `:latest` is ignored, a name given without its repository path ("desktop" for
 * sandbox-desk/desktop) counts as close, and closeness is judged on the last path component so a shared
 * repository prefix does not make "nope" close to "base". An exact match is not a suggestion.
 */
export function closestImageName(typed: string, candidates: readonly string[]): string | null {
  const t = bareImage(typed.trim().toLowerCase());
  if (!t) return null;
  let best: { name: string; d: number } | null = null;
  for (const c of candidates) {
    const b = bareImage(c.toLowerCase());
    if (b === t) return null;
    const d = b.endsWith(`/${t}`) || b.split('/').pop() === t ? 1 : editDistance(t, b);
    if (!best || d < best.d) best = { name: c, d };
  }
  if (!best) return null;
  const last = t.split('/').pop() ?? t;
  return best.d <= Math.min(3, Math.max(1, Math.floor(last.length / 3))) ? best.name : null;
}
