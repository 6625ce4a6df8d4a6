/**
 * Where a data directory keeps its network state, and the two files the app and the egress proxy
 * process share: `policies.json` (the app writes it, atomically; the proxy re-reads it when it changes,
 * so a policy change takes effect on the next connection) and one bounded JSON-lines log per sandbox
 * (the proxy's pump appends: src/sandbox/network/pump/journal.c; the app and `network log --follow`
 * read it).
 *
 *   <dataDir>/network/policies.json
 *   <dataDir>/network/proxy.pid           the proxy process (its lock: one per data dir)
 *   <dataDir>/network/proxy.log           the proxy's own messages (start, errors)
 *   <dataDir>/network/s/<id>/proxy.sock   the proxy's Unix socket for this sandbox (QEMU's guestfwd)
 *   <dataDir>/network/s/<id>/relay.sock   where the sandbox's docker relay passes its connections; the
 *                                         folder is bind-mounted into the relay (a file mount would go
 *                                         stale when the proxy restarts and makes a new socket)
 *   <dataDir>/network/logs/<sandbox>.jsonl (+ .1.jsonl: the previous half)
 *   <dataDir>/network/spans/<sandbox>.jsonl  the commands run (session, shell pid, start, end): how a
 *                                         connection is linked to the agent call that made it
 */
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NetworkLogEntry, NetworkPolicy } from '../../shared/network-policy.js';

/** A log keeps at most about twice this (the current file and the one before). */
export const LOG_MAX_BYTES = 512 * 1024;

export function networkDir(dataDir: string): string {
  return join(dataDir, 'network');
}

/** Short on purpose: a Unix socket path must stay under 108 bytes whatever the data dir and sandbox name. */
export function socketDirOf(dataDir: string, sandbox: string): string {
  return join(networkDir(dataDir), 's', createHash('sha256').update(sandbox).digest('hex').slice(0, 12));
}

export const SOCKET_NAME = 'proxy.sock';
export const RELAY_SOCKET_NAME = 'relay.sock';

export function policiesFile(dataDir: string): string {
  return join(networkDir(dataDir), 'policies.json');
}

export function logFileOf(dataDir: string, sandbox: string): string {
  return join(networkDir(dataDir), 'logs', `${sandbox}.jsonl`);
}

/** The policies in `file` (policiesFile); none while there is no file (writePolicies replaces it whole). */
export function readPolicies(file: string): Record<string, NetworkPolicy> {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Record<string, NetworkPolicy>;
  } catch {
    return {};
  }
}

/** Atomic (write + rename), so the proxy never reads half a file. */
export function writePolicies(dataDir: string, policies: Record<string, NetworkPolicy>): void {
  mkdirSync(networkDir(dataDir), { recursive: true, mode: 0o700 });
  const file = policiesFile(dataDir);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(policies, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}

/** The older half of a log (or spans) file. */
export function olderOf(file: string): string {
  return file.replace(/\.jsonl$/, '.1.jsonl');
}

function parseLines(text: string): NetworkLogEntry[] {
  const out: NetworkLogEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    try {
      out.push(JSON.parse(line) as NetworkLogEntry);
    } catch {
      // a line cut by a crash mid-write: skipped
    }
  }
  return out;
}

/** The newest `limit` entries of a sandbox's log, oldest first. */
export function readLog(dataDir: string, sandbox: string, limit = 500): NetworkLogEntry[] {
  const file = logFileOf(dataDir, sandbox);
  const older = olderOf(file);
  const read = (f: string): string => (existsSync(f) ? readFileSync(f, 'utf8') : '');
  const all = [...parseLines(read(older)), ...parseLines(read(file))];
  return all.slice(-limit);
}

/** Reads what was appended to a log since `offset` (bytes); a rotated file starts again at 0. */
export function readLogSince(dataDir: string, sandbox: string, offset: number): { entries: NetworkLogEntry[]; offset: number } {
  const file = logFileOf(dataDir, sandbox);
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    return { entries: [], offset: 0 };
  }
  const from = size < offset ? 0 : offset;
  if (size === from) return { entries: [], offset: from };
  const buf = readFileSync(file).subarray(from);
  // Only whole lines: a line still being written is read next time.
  const lastNl = buf.lastIndexOf(0x0a);
  if (lastNl < 0) return { entries: [], offset: from };
  return { entries: parseLines(buf.subarray(0, lastNl + 1).toString('utf8')), offset: from + lastNl + 1 };
}

/** One command that ran in a sandbox with a network policy: which shell (pid inside the sandbox), when. */
export interface CommandSpan {
  session: string;
  pid: number;
  start: string;
  end: string;
}

export function spansFileOf(dataDir: string, sandbox: string): string {
  return join(networkDir(dataDir), 'spans', `${sandbox}.jsonl`);
}

/** Appends one span (bounded the same way as the log: the current file and the one before). */
export function appendSpan(dataDir: string, sandbox: string, span: CommandSpan): void {
  const file = spansFileOf(dataDir, sandbox);
  mkdirSync(join(networkDir(dataDir), 'spans'), { recursive: true, mode: 0o700 });
  try {
    if (statSync(file).size > LOG_MAX_BYTES) renameSync(file, olderOf(file));
  } catch {
    // no file yet
  }
  appendFileSync(file, `${JSON.stringify(span)}\n`, { mode: 0o600 });
}

export function readSpans(dataDir: string, sandbox: string): CommandSpan[] {
  const file = spansFileOf(dataDir, sandbox);
  const out: CommandSpan[] = [];
  for (const f of [olderOf(file), file]) {
    if (!existsSync(f)) continue;
    for (const line of readFileSync(f, 'utf8').split('\n')) {
      if (!line) continue;
      try {
        out.push(JSON.parse(line) as CommandSpan);
      } catch {
        // a line cut by a crash mid-write
      }
    }
  }
  return out;
}
