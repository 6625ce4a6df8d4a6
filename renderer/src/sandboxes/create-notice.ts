import type { CreateSandboxResult } from '../../../src/api/contract.js';
import { warmOutcomePhrase } from '../../../src/shared/warm-outcome.js';
import { warningLabel } from '../ui/warnings.js';

/**
 * The notice a create leaves on its sandbox: that it was made, whether it started warm from a pool
 * (issue 37: the person sees what the pool bought them) or cold and why (warmOutcomePhrase), and
 * its warnings, which make the notice one that stays until dismissed.
 */
export function createdNotice(r: CreateSandboxResult, poolsConfigured: boolean): { text: string; bad: boolean } {
  const name = r.sandbox.name;
  const phrase = warmOutcomePhrase(r, poolsConfigured);
  const how = phrase ? ` ${phrase}` : '';
  if (r.warnings.length === 0) return { text: `Created ${name}${how}.`, bad: false };
  const listed = r.warnings.map((w) => `${warningLabel(w).label} — ${w.message}`).join('; ');
  return { text: `Created ${name}${how}, with warnings: ${listed}`, bad: true };
}
