import type { SandboxInfo, SessionInfo } from '../../../src/api/contract.js';
import { Ago } from '../ui/Ago.js';
import { WarningBadges } from './WarningBadges.js';

interface Props {
  sandbox: SandboxInfo;
  sessions: SessionInfo[];
  onOpenTerminal: (session: string) => void;
  /** The session the agent calls below are filtered to, if any (its row is marked). */
  selected?: string | null;
  /** Clicking a row picks its session (clicking the picked one again clears it). */
  onSelect?: (session: string | null) => void;
}

/**
 * One row per session, the three cwd layers side by side. The layer the session's next command
 * starts from (its record, else the default) is highlighted; the environment's last observed cwd is
 * shared by all sessions and only shown for comparison.
 */
export function SessionsTable({ sandbox, sessions, onOpenTerminal, selected = null, onSelect }: Props) {
  return (
    <div className="table-wrap">
      <table className="table sessions">
        <thead>
          <tr>
            <th>Session</th>
            <th>Parent</th>
            <th title="Layer a: this session's own record">Session cwd (a)</th>
            <th>Source</th>
            <th>Observed</th>
            <th title="Layer b: shared by every session">Env last observed (b)</th>
            <th title="Layer c: used when a session has no record">Default (c)</th>
            <th>Last command's warnings</th>
            <th aria-label="Actions" />
          </tr>
        </thead>
        <tbody>
          {sessions.map((x) => {
            const usesRecord = x.cwd !== null;
            return (
              <tr
                key={x.key}
                data-testid={`session-row-${x.key}`}
                className={
                  [onSelect ? 'row-clickable' : '', selected === x.key ? 'row-selected' : ''].filter(Boolean).join(' ') || undefined
                }
                title={
                  onSelect
                    ? selected === x.key
                      ? "Showing only this session's agent calls — click to show all"
                      : "Click to show only this session's agent calls"
                    : undefined
                }
                onClick={onSelect ? () => !selectingText() && onSelect(selected === x.key ? null : x.key) : undefined}
              >
                <td className="mono key" title={x.key}>
                  {x.key}
                </td>
                <td className="mono muted">{x.parent ?? '—'}</td>
                <td
                  className={`mono layer${usesRecord ? ' layer-active' : ''}`}
                  data-testid={`session-cwd-${x.key}`}
                  title={usesRecord ? 'next command starts here' : undefined}
                >
                  {x.cwd ?? <span className="muted">no record</span>}
                </td>
                <td className="muted">
                  {x.source ?? '—'}
                  {x.restoredFrom && (
                    <span
                      className="badge badge-info"
                      title={`written from checkpoint ${x.restoredFrom} by a restore or fork, then re-measured`}
                    >
                      restored {x.restoredFrom}
                    </span>
                  )}
                </td>
                <td className="muted nowrap" title={x.observedAt ?? undefined}>
                  <Ago iso={x.observedAt} />
                </td>
                <td className="mono layer muted">{sandbox.lastObservedCwd ?? '—'}</td>
                <td
                  className={`mono layer${usesRecord ? ' muted' : ' layer-active'}`}
                  title={usesRecord ? undefined : 'next command starts here'}
                >
                  {sandbox.defaultCwd ?? sandbox.declaredDefaultCwd}
                </td>
                <td data-testid={`session-warnings-${x.key}`}>
                  <WarningBadges warnings={x.lastWarnings} />
                </td>
                <td>
                  <button
                    className="btn btn-small"
                    onClick={(e) => {
                      e.stopPropagation();
                      onOpenTerminal(x.key);
                    }}
                    disabled={sandbox.state !== 'running'}
                    title="Open a terminal in this session (starts in its cwd record)"
                  >
                    Terminal
                  </button>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/** A drag that selected text (to copy a path) is not a click on the row. */
function selectingText(): boolean {
  const sel = typeof window.getSelection === 'function' ? window.getSelection() : null;
  return !!sel && !sel.isCollapsed && sel.toString().length > 0;
}
