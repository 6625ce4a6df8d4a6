/**
 * Links agent calls to the connections they made (issue 17: "the agent call log links a command to the
 * connections it made"), on reading — the call log, the command spans and the connection log are
 * written by different processes (the MCP server, the core that ran the command, the egress proxy), so
 * the join is made where they are read, not where any one of them is written.
 *
 * A call's command ran in a shell whose pid (inside the sandbox) its span recorded; a connection
 * belongs to that call when it happened while the span ran and its process is that shell or descends
 * from it (`linkedBy: 'process'`). A connection whose process is not known (a QEMU guest; a process
 * gone before it was looked up) that happened while the call ran is linked by time (`'window'`).
 * A connection whose known process is not the command's (the desktop's Chromium, a terminal) is not
 * linked to it, even in its window.
 */
import type { CallLogEntry, LinkedConnection } from '../shared/call-log-types.js';
import type { NetworkLogEntry } from '../shared/network-policy.js';
import type { CommandSpan } from '../sandbox/network/network-files.js';

/** Clock slack between the processes that stamp the three logs (all on this machine). */
const SLACK_MS = 250;

interface Window {
  start: number;
  end: number;
}

function callWindow(c: CallLogEntry): Window {
  const start = Date.parse(c.at);
  return { start, end: start + (c.durationMs ?? 0) };
}

/** The span of the call's command: same session, inside the call's window. */
function spanOf(c: CallLogEntry, spans: readonly CommandSpan[]): CommandSpan | null {
  const w = callWindow(c);
  const session = c.session ?? 'default';
  return (
    spans.find((s) => s.session === session && Date.parse(s.start) >= w.start - SLACK_MS && Date.parse(s.end) <= w.end + SLACK_MS) ?? null
  );
}

/** A session's shell runs its commands one after another: a span is tight, only this much either side. */
const SPAN_SLACK_MS = 20;

/**
 * The span that made a connection with a known process: one of its shell's (the process is the shell
 * or descends from it) whose time holds the connection — the latest to start when two are that close.
 */
function ownerOf(e: NetworkLogEntry, spans: readonly CommandSpan[]): CommandSpan | null {
  const t = Date.parse(e.at);
  let best: CommandSpan | null = null;
  for (const s of spans) {
    if (e.pid !== s.pid && !(e.ancestry ?? []).includes(s.pid)) continue;
    if (t < Date.parse(s.start) - SPAN_SLACK_MS || t > Date.parse(s.end) + SPAN_SLACK_MS) continue;
    if (!best || Date.parse(s.start) <= t) best = s;
  }
  return best;
}

function linkOne(c: CallLogEntry, spans: readonly CommandSpan[], log: readonly NetworkLogEntry[]): LinkedConnection[] {
  const span = spanOf(c, spans);
  const w = callWindow(c);
  const out: LinkedConnection[] = [];
  for (const e of log) {
    if (e.pid !== undefined && e.process !== null) {
      if (span && ownerOf(e, spans) === span) out.push({ ...e, linkedBy: 'process' });
      continue;
    }
    const t = Date.parse(e.at);
    if (t >= w.start - SLACK_MS && t <= w.end + SLACK_MS) out.push({ ...e, linkedBy: 'window' });
  }
  return out;
}

/** The calls with `connections` filled (only for calls in `sandbox`). */
export function linkCalls(
  calls: readonly CallLogEntry[],
  sandbox: string,
  spans: readonly CommandSpan[],
  log: readonly NetworkLogEntry[],
): CallLogEntry[] {
  return calls.map((c) => (c.sandbox === sandbox ? { ...c, connections: linkOne(c, spans, log) } : c));
}

/** The log with `callId` on each line that a call's command made (by process; by time when the process is unknown). */
export function markCalls(
  log: readonly NetworkLogEntry[],
  calls: readonly CallLogEntry[],
  sandbox: string,
  spans: readonly CommandSpan[],
): NetworkLogEntry[] {
  const byLine = new Map<NetworkLogEntry, number>();
  for (const c of calls) {
    if (c.sandbox !== sandbox) continue;
    for (const linked of linkOne(c, spans, log)) {
      const original = log.find(
        (e) => e.at === linked.at && e.host === linked.host && e.port === linked.port && e.kind === linked.kind && !byLine.has(e),
      );
      if (original) byLine.set(original, c.id);
    }
  }
  return log.map((e) => (byLine.has(e) ? { ...e, callId: byLine.get(e)! } : e));
}
