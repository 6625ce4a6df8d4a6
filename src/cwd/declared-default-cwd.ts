import type { ExecWarning } from '../shared/exec-result.js';
import { isHostOnly, isHostShapedPath, isUnderPath, normalizeAbsolute, type HostPathContext } from './host-paths.js';

/**
 * A declared default cwd — from a provider's `defaultCwd` or a sandbox's `--default-cwd` — is an absolute
 * in-sandbox path or `"~"`. Anything else is ignored with a warning and never thrown: a bad declaration
 * must not take the backend down (seed 001).
 */
export interface DeclaredCwd {
  /** `"~"`, an absolute normalised path, or undefined when nothing usable was declared. */
  value: string | undefined;
  warning?: ExecWarning;
}

export function normalizeDeclaredCwd(
  raw: unknown,
  opts: {
    isContainer: boolean;
    origin: string;
    fallback: string;
    /** The sandbox user's measured home; undefined while not yet connected. */
    sandboxHome?: string | undefined;
  } & HostPathContext,
): DeclaredCwd {
  if (raw === undefined || raw === null || raw === '') return { value: undefined };
  const shown = describe(raw);
  const ignore = (why: string): DeclaredCwd => ({
    value: undefined,
    warning: {
      code: 'default_cwd_ignored',
      message: `${opts.origin} ${shown} ignored: ${why}; using ${opts.fallback}`,
      asked: typeof raw === 'string' ? raw : shown,
      used: opts.fallback,
    },
  });
  if (typeof raw !== 'string') return ignore('it is not a string');
  if (raw.includes('\0') || raw.includes('\n')) return ignore('it contains a NUL or newline');
  if (raw === '~') return { value: '~' };
  if (!raw.startsWith('/')) {
    return ignore(
      opts.isContainer || raw.startsWith('~')
        ? 'it must be an absolute in-sandbox path or "~"'
        : 'it is relative and would be anchored on the host',
    );
  }
  if (opts.isContainer && isHostShapedPath(raw, opts)) {
    // `/home/x/…` may be the sandbox's own home: that is decided once the home is measured
    // (see `isHostOnly`); the unambiguous host shapes are refused now.
    if (opts.sandboxHome === undefined ? isHostOnly(raw) : !isUnderPath(raw, opts.sandboxHome)) {
      return ignore('it looks like a host path, which does not exist inside a container');
    }
  }
  return { value: normalizeAbsolute(raw) };
}

/** Shows any value in a message without throwing (BigInt, circular or prototype-less objects). */
function describe(raw: unknown): string {
  if (typeof raw === 'string') return JSON.stringify(raw);
  try {
    return JSON.stringify(raw) ?? typeof raw;
  } catch {
    return `a ${typeof raw}`;
  }
}

/** Reads a provider's `defaultCwd` getter defensively: a getter that throws counts as "not declared". */
export function readProviderDefaultCwd(provider: { defaultCwd: unknown; name: string }): { raw: unknown; error?: string } {
  try {
    return { raw: provider.defaultCwd };
  } catch (err) {
    return { raw: undefined, error: `backend ${provider.name}: defaultCwd threw ${err instanceof Error ? err.message : String(err)}` };
  }
}
