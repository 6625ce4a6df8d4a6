import type { Mount } from '../sandbox/provider.js';
import { SandboxDeskError } from '../shared/errors.js';

/** `--timeout` must be a positive number of seconds. */
export function parseTimeout(raw: string): number {
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n) || n <= 0) {
    throw new SandboxDeskError('invalid_input', `--timeout must be a positive number of seconds, got ${JSON.stringify(raw)}`);
  }
  return n;
}

export function parseKeyValues(items: string[], flag: string): Record<string, string> {
  const pairs = items.map((item): [string, string] => {
    const at = item.indexOf('=');
    if (at <= 0) throw new SandboxDeskError('invalid_input', `${flag} expects KEY=VALUE, got ${JSON.stringify(item)}`);
    return [item.slice(0, at), item.slice(at + 1)];
  });
  // fromEntries defines own properties, so even a key named __proto__ is kept as given.
  return Object.fromEntries(pairs);
}

/** `--mount /host/dir:/in/sandbox[:ro]` */
export function parseMounts(items: string[]): Mount[] {
  return items.map((item) => {
    const parts = item.split(':');
    const ro = parts.length === 3 && parts[2] === 'ro';
    if (!(parts.length === 2 || ro) || !parts[0]!.startsWith('/') || !parts[1]!.startsWith('/')) {
      throw new SandboxDeskError('invalid_input', `--mount expects /host/dir:/sandbox/dir[:ro], got ${JSON.stringify(item)}`);
    }
    return { hostPath: parts[0]!, sandboxPath: parts[1]!, ...(ro ? { readOnly: true } : {}) };
  });
}

/**
 * Whether the app's own output (errors included) should be JSON: `--json` among the app's options,
 * i.e. before a `--`. After it, `--json` is a word of the sandbox command (`exec box -- tool --json`).
 * Decided from argv because an error may come before commander has parsed anything.
 */
export function wantsJsonOutput(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end < 0 ? argv : argv.slice(0, end)).includes('--json');
}
