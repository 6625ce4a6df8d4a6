/**
 * How a create started, in words both the window's notice and the CLI's line use (issue 37): warm
 * from a named pool, or cold and why — the why only when pools are set up, since with none (the
 * default) every create is cold and saying so each time is noise. Empty when there is nothing to say.
 */
export function warmOutcomePhrase(r: { warm?: boolean; warmPool?: string; warmReason?: string }, poolsConfigured: boolean): string {
  if (r.warm) return `warm from the pool of ${r.warmPool ?? 'its template'}`;
  return poolsConfigured && r.warmReason ? `cold (${r.warmReason})` : '';
}

/** Why a create went cold where no pool is set up at all (the default); one text, so a client can tell it apart. */
export const NO_POOLS_REASON = 'no warm pool is configured (see `sandbox-desk pool set`)';

/** Whether pools were set up when this create ran, from its own answer (for a client that did not ask for the pools). */
export function poolsWereConfigured(r: { warm?: boolean; warmPool?: string; warmReason?: string }): boolean {
  return r.warm === true || (r.warmReason !== undefined && r.warmReason !== NO_POOLS_REASON);
}
