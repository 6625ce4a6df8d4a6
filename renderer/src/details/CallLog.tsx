import type { CallLogEntry } from '../../../src/api/contract.js';
import { useApi } from '../app/api-context.js';
import { ago } from '../ui/format.js';
import { usePoll } from '../hooks/usePoll.js';
import { touches } from '../events/topics.js';
import { WarningBadges } from './WarningBadges.js';

/** How many of the newest calls the table shows (and exports). */
export const CALL_LOG_LIMIT = 50;

interface Props {
  sandbox: string;
  /** Polling stops while another view is shown. */
  visible: boolean;
  /** Session keys to offer in the filter (the sandbox's sessions; sessions seen in the log are added). */
  sessions: string[];
  /** Only this session's calls, or all of them. */
  session: string | null;
  onSessionChange: (session: string | null) => void;
}

/**
 * The receipt of every call an agent made through the MCP bridge, newest first: which session, which
 * tool, where it started and where it was measured to end, how it ended, what was noticed on the way.
 */
export function CallLog({ sandbox, visible, sessions, session, onSessionChange }: Props) {
  const api = useApi();
  const calls = usePoll<CallLogEntry[]>(
    () => api.call('callLog', session === null ? { sandbox, limit: CALL_LOG_LIMIT } : { sandbox, session, limit: CALL_LOG_LIMIT }),
    2000,
    `${sandbox}\u0000${session ?? ''}`,
    visible,
    { live: touches.callLogOf(sandbox) },
  );
  const entries = calls.data ?? [];
  const newestFirst = [...entries].reverse();
  const filterKeys = [
    ...new Set([
      ...sessions,
      ...entries.map((e) => e.session).filter((k): k is string => k !== null),
      ...(session === null ? [] : [session]),
    ]),
  ].sort();

  return (
    <section className="card card-wide" data-testid="calls">
      <div className="card-head">
        <h3>
          Agent calls
          <span className="muted small">
            {' '}
            — every call an agent made through the MCP bridge, newest first
            {entries.length >= CALL_LOG_LIMIT ? ` (the last ${CALL_LOG_LIMIT})` : ''}
          </span>
        </h3>
        <span className="spacer" />
        <label className="small muted nowrap">
          Session{' '}
          <select
            className="input-small"
            data-testid="calls-session-filter"
            value={session ?? ''}
            onChange={(e) => onSessionChange(e.target.value === '' ? null : e.target.value)}
          >
            <option value="">all sessions</option>
            {filterKeys.map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        </label>
        <button
          className="btn btn-small"
          data-testid="calls-export"
          disabled={entries.length === 0}
          onClick={() => downloadJsonl(entries, `sandbox-desk-calls-${sandbox}.jsonl`)}
          title="Download the calls shown here as JSON lines, oldest first (every call: sandbox-desk log --jsonl)"
        >
          Export
        </button>
      </div>
      {calls.error && (
        <div className="notice notice-error" role="alert">
          {calls.error.message}
          {calls.error.hint && <span className="small">{calls.error.hint}</span>}
        </div>
      )}
      {calls.loading && !calls.data && <div className="muted">Loading agent calls…</div>}
      {calls.data && entries.length === 0 && (
        <div className="empty-inline muted" data-testid="calls-empty">
          {session === null ? (
            <>
              No agent calls yet. Connect an agent with <code>sandbox-desk mcp</code> (see README).
            </>
          ) : (
            <>
              No agent calls in session <code>{session}</code> yet.{' '}
              <button className="link" onClick={() => onSessionChange(null)}>
                Show all sessions
              </button>
            </>
          )}
        </div>
      )}
      {entries.length > 0 && (
        <div className="table-wrap">
          <table className="table calls" data-testid="calls-table">
            <thead>
              <tr>
                <th>Time</th>
                <th>Session</th>
                <th>Tool</th>
                <th title="The directory the call started in → the cwd measured when it ended">Cwd used → observed</th>
                <th>Result</th>
                <th>Warnings</th>
                <th className="num">Duration</th>
              </tr>
            </thead>
            <tbody>
              {newestFirst.map((e) => (
                <tr key={e.id} data-testid={`call-row-${e.id}`}>
                  <td className="muted nowrap" title={e.at}>
                    {ago(e.at)}
                  </td>
                  <td className="mono key" title={e.session ?? undefined}>
                    {e.session ?? <span className="muted">—</span>}
                  </td>
                  <td className="mono nowrap">{e.tool}</td>
                  <td className="mono layer" data-testid={`call-cwd-${e.id}`}>
                    <CwdCell e={e} />
                  </td>
                  <td className="mono" data-testid={`call-result-${e.id}`}>
                    <ResultCell e={e} />
                  </td>
                  <td>
                    <WarningBadges warnings={e.warnings} />
                    {e.connections && e.connections.length > 0 && (
                      <span
                        className="badge"
                        data-testid={`call-connections-${e.id}`}
                        title={e.connections
                          .map((c) => `${c.verdict} ${c.host}:${c.port}${c.process ? ` — ${c.process}` : ''} (${c.linkedBy})`)
                          .join('\n')}
                      >
                        {e.connections.length} connection{e.connections.length === 1 ? '' : 's'}
                        {e.connections.some((c) => c.verdict === 'denied')
                          ? ` (${e.connections.filter((c) => c.verdict === 'denied').length} denied)`
                          : ''}
                      </span>
                    )}
                  </td>
                  <td className="muted nowrap num">{duration(e.durationMs)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** A command that ran (it has an exit code, or it is the shell tool and did not fail before running). */
function ranCommand(e: CallLogEntry): boolean {
  return e.error === null && (e.exitCode !== null || e.tool === 'execute_shell_command');
}

function CwdCell({ e }: { e: CallLogEntry }) {
  if (e.cwdUsed === null && e.cwdObserved === null) return <span className="muted">—</span>;
  const used = e.cwdUsed ?? '?';
  if (e.cwdObserved === null) {
    if (!ranCommand(e)) return <>{used}</>;
    return (
      <>
        {used} <span className="muted">→</span>{' '}
        <span
          className="text-warn"
          title="The command ended without its cwd being measured (killed or timed out): the session's record did not move."
        >
          not observed
        </span>
      </>
    );
  }
  const moved = e.cwdObserved !== e.cwdUsed;
  return (
    <>
      {used} <span className="muted">→</span>{' '}
      <span
        className={moved ? 'cwd-moved' : 'muted'}
        title={moved ? 'the command changed directory; the session now starts here' : 'ended where it started'}
      >
        {e.cwdObserved}
      </span>
    </>
  );
}

function ResultCell({ e }: { e: CallLogEntry }) {
  if (e.error !== null)
    return (
      <span className="text-bad call-error" title={e.error}>
        {e.error}
      </span>
    );
  if (e.exitCode === null) return <span className="muted">ok</span>;
  return <span className={e.exitCode === 0 ? 'text-ok' : 'text-warn'}>exit {e.exitCode}</span>;
}

/** "42 ms", "1.3 s", "2 min 5 s". */
export function duration(ms: number | null): string {
  if (ms === null) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** The calls as JSON lines, oldest first: one object per line, like `sandbox-desk log --jsonl`. */
export function toJsonl(entries: CallLogEntry[]): string {
  return entries.map((e) => JSON.stringify(e)).join('\n') + (entries.length ? '\n' : '');
}

/** Saves the calls as a file, built here (nothing goes back to the server). */
function downloadJsonl(entries: CallLogEntry[], filename: string): void {
  const url = URL.createObjectURL(new Blob([toJsonl(entries)], { type: 'application/x-ndjson' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.style.display = 'none';
  document.body.appendChild(a);
  try {
    a.click();
  } finally {
    a.remove();
    // The download has its own reference once started; let go of ours after this turn.
    setTimeout(() => URL.revokeObjectURL(url), 0);
  }
}
