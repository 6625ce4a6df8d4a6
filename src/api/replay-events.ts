import type { CallLogEntry } from '../shared/call-log-types.js';
import type { ExecWarning } from '../shared/exec-result.js';
import type { ReplayEvent } from '../shared/replay-types.js';

/** Clock slack between a call's own times (taken in the MCP layer) and its command's or action's (taken below it). */
const SLACK_MS = 5;

const warningText = (w: ExecWarning): string => `${w.code}: ${w.message}`;

/** A call-log entry as a replay event, before it is merged with what it ran. */
export function callEvent(c: CallLogEntry): ReplayEvent {
  return {
    at: c.at,
    kind: 'agentCall',
    summary: c.error ? `${c.tool}: ${c.error}` : c.tool,
    tool: c.tool,
    session: c.session,
    cwdUsed: c.cwdUsed,
    cwdObserved: c.cwdObserved,
    exitCode: c.exitCode,
    durationMs: c.durationMs,
    warnings: c.warnings.map(warningText),
    error: c.error,
  };
}

const ms = (e: ReplayEvent) => Date.parse(e.at);

/** Does `e` (a command or an action journalled below the call) fall inside the call's run? */
function within(call: ReplayEvent, e: ReplayEvent): boolean {
  const start = ms(call);
  const end = start + (call.durationMs ?? 0);
  return ms(e) >= start - SLACK_MS && ms(e) <= end + SLACK_MS;
}

/**
 * One row per agent action: an agent's call and what it caused below it are the same act, so each
 * call takes over the command it ran (its text, the cwd used → observed, the exit code, the session)
 * and each desktop action takes over its call (the session, a refusal's error). A command with no call
 * (the CLI's `exec`, a person's) and a failed call with no command stay rows of their own. Each
 * command or action is claimed by at most one call — the first call whose run contains it, in the
 * same session (a call that named no session: any).
 */
export function mergeAgentEvents(calls: readonly CallLogEntry[], journal: readonly ReplayEvent[]): ReplayEvent[] {
  const claimed = new Set<ReplayEvent>();
  const out: ReplayEvent[] = [];
  for (const c of calls) {
    const call = callEvent(c);
    const cmd = journal.find(
      (e) => e.kind === 'command' && !claimed.has(e) && (call.session == null || e.session === call.session) && within(call, e),
    );
    if (cmd) {
      claimed.add(cmd);
      out.push({
        ...call,
        summary: `${call.tool}: ${cmd.summary}`,
        session: cmd.session ?? call.session,
        terminalId: cmd.terminalId ?? null,
        // The command's own measurement (the call log keeps what the tool's receipt said, when it had one).
        cwdUsed: cmd.cwdUsed ?? call.cwdUsed ?? null,
        cwdObserved: cmd.cwdObserved !== undefined ? cmd.cwdObserved : (call.cwdObserved ?? null),
        exitCode: cmd.exitCode ?? call.exitCode ?? null,
        warnings: [...new Set([...(call.warnings ?? []), ...(cmd.warnings ?? [])])],
        error: call.error ?? cmd.error ?? null,
      });
      continue;
    }
    const action = journal.find((e) => e.kind === 'action' && !claimed.has(e) && e.tool === call.tool && within(call, e));
    if (action) {
      claimed.add(action);
      out.push({
        ...action,
        at: call.at,
        session: call.session,
        durationMs: call.durationMs ?? null,
        ...(call.warnings?.length ? { warnings: call.warnings } : {}),
        ...(call.error ? { error: call.error } : {}),
      });
      continue;
    }
    out.push(call);
  }
  for (const e of journal) if (!claimed.has(e)) out.push(e);
  return out;
}
