import type { DefaultCwdStatus } from './contract.js';

/**
 * What the user typed for the default cwd, and what became of it — the line Details shows (issue 13
 * item 6: "what the user typed is what Details shows, with its status"). Pure: the facts come from the
 * sandbox's record (typed, declared) and its environment (resolved).
 *   typed     exactly what was typed at create; null when none was given
 *   declared  the usable, normalised declaration kept in the record; null when none (or it was dropped)
 *   effective the declaration in effect (the backend's when the sandbox has none)
 *   resolved  the environment's default cwd ("~" resolved to the measured home); null until connected
 */
export function defaultCwdStatus(f: {
  typed: string | null;
  declared: string | null;
  effective: string;
  resolved: string | null;
}): DefaultCwdStatus {
  const { typed, declared, effective, resolved } = f;
  const arrow = (from: string, to: string | null) => (to && to !== from ? `${from} → ${to}` : from);
  if (typed === null) {
    return {
      typed,
      state: 'backend-default',
      text: resolved
        ? `${arrow(effective, resolved)} (not given: the default)`
        : `${effective} (not given: the default; resolved once connected)`,
    };
  }
  if (declared === null) {
    return {
      typed,
      state: 'ignored',
      text: `${typed} — ignored: not usable inside this sandbox; using ${resolved ?? effective}`,
    };
  }
  if (resolved === null) {
    return {
      typed,
      state: 'not-connected',
      text: `${arrow(typed, declared)} (resolved once the sandbox is connected)`,
    };
  }
  if (resolved === typed) return { typed, state: 'as-typed', text: `${typed} (as typed)` };
  if (resolved === declared) return { typed, state: 'normalized', text: `${typed} → ${resolved} (normalized)` };
  return { typed, state: 'resolved', text: `${typed} → ${resolved} (resolved)` };
}
