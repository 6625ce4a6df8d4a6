import type { NetworkLogEntry } from './network-policy.js';

/** What the network log is narrowed to: in the window's filter row and `network log --denied --process --host`. */
export interface NetworkLogFilter {
  /** Only the connections the proxy refused. */
  denied?: boolean;
  /** Part of the process name (case-insensitive), e.g. `curl`; lines with no known process never match. */
  process?: string;
  /** Part of the host (case-insensitive), e.g. `github.com` also matches `api.github.com`. */
  host?: string;
}

export function matchesNetworkLog(e: NetworkLogEntry, f: NetworkLogFilter): boolean {
  if (f.denied && e.verdict !== 'denied') return false;
  const proc = f.process?.trim().toLowerCase();
  if (proc && !(e.process ?? '').toLowerCase().includes(proc)) return false;
  const host = f.host?.trim().toLowerCase();
  if (host && !e.host.toLowerCase().includes(host)) return false;
  return true;
}

/** True when the filter narrows anything (an empty form shows every line). */
export function filtersNetworkLog(f: NetworkLogFilter): boolean {
  return Boolean(f.denied || f.process?.trim() || f.host?.trim());
}
