/**
 * A session key as a table shows it: bare when it reads unambiguously (`default`, `agent-1`,
 * `build/step.2`), JSON-quoted when it would not — empty, spaces, quotes, control characters, or the
 * `-` the table uses for "none".
 */
export function displayKey(key: string): string {
  return key !== '-' && /^[\p{L}\p{N}_.:@%+=,/-]+$/u.test(key) ? key : JSON.stringify(key);
}
