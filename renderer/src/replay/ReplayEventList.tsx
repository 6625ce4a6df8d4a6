import { useEffect, useRef } from 'react';
import type { ReplayEvent } from '../../../src/shared/replay-types.js';
import type { RecordingIndicator } from './replay-api.js';
import { formatOffset } from './timeline.js';

interface Props {
  events: readonly ReplayEvent[];
  startMs: number;
  /** The event current at t (highlighted, scrolled into view). */
  current: number;
  selected: number | null;
  onJump: (index: number) => void;
  recording: RecordingIndicator | null;
}

const KIND_LABEL: Record<ReplayEvent['kind'], string> = {
  agentCall: 'call',
  command: 'command',
  action: 'action',
  lease: 'lease',
  checkpoint: 'checkpoint',
  restore: 'restore',
  fork: 'fork',
  network: 'network',
  recording: 'recording',
};

/** Where a call or command ran: the cwd it was given, then the one it was measured to end in. */
function CwdOf({ e }: { e: ReplayEvent }) {
  // Calls that run nothing in a shell (a click, a screenshot) have no cwd: nothing to show.
  if (!e.cwdUsed && !e.cwdObserved) return null;
  const moved = e.cwdObserved && e.cwdUsed !== e.cwdObserved;
  return (
    <span className="replay-cwd mono small" data-testid="replay-event-cwd">
      {e.cwdUsed ?? '?'}
      {moved && <> → {e.cwdObserved}</>}
      {e.cwdObserved === null && <span className="muted"> (not observed)</span>}
    </span>
  );
}

/**
 * The run's agent actions (a call with the command it ran is one row), commands, lease changes,
 * checkpoints, restores, forks and network policy changes, oldest first, each with its time, session,
 * cwd and warnings; each a button that moves the replay to it. The list scrolls in its own pane.
 */
export function ReplayEventList({ events, startMs, current, selected, onJump, recording }: Props) {
  const list = useRef<HTMLOListElement>(null);
  useEffect(() => {
    // Only the list scrolls (scrollIntoView would move the whole view, scrubber and screen with it).
    const box = list.current;
    const item = box?.querySelector<HTMLElement>('[data-current="true"]');
    if (!box || !item) return;
    const top = item.offsetTop; // the list is the offset parent (position: relative)
    if (top < box.scrollTop) box.scrollTop = top;
    else if (top + item.offsetHeight > box.scrollTop + box.clientHeight) box.scrollTop = top + item.offsetHeight - box.clientHeight;
  }, [current]);
  return (
    <section className="replay-events card" aria-label="What happened" data-testid="replay-events">
      <h3>
        Calls and commands
        {recording?.on && (
          <span className="replay-rec" data-testid="replay-rec-list" title="Still recording: new events appear here">
            ● REC
          </span>
        )}
        <span className="muted small"> {events.length} events</span>
      </h3>
      {events.length === 0 && <div className="muted empty-inline">Nothing happened in this recording yet.</div>}
      <ol ref={list} className="replay-event-list">
        {events.map((e, i) => {
          const warn = Boolean(e.warnings?.length || e.error || (typeof e.exitCode === 'number' && e.exitCode !== 0));
          return (
            <li key={i} data-current={i === current} data-testid="replay-event">
              <button
                type="button"
                className={`replay-event${i === current ? ' on' : ''}${i === selected ? ' selected' : ''}${warn ? ' warn' : ''}`}
                aria-current={i === current ? 'true' : undefined}
                onClick={() => onJump(i)}
              >
                <span className="mono small replay-event-time" data-testid="replay-event-time">
                  {formatOffset(Date.parse(e.at) - startMs)}
                </span>
                <span className={`pill replay-kind-${e.kind}`}>{KIND_LABEL[e.kind]}</span>
                <span className="replay-event-summary" data-testid="replay-event-summary" title={e.summary}>
                  {e.summary}
                </span>
                {e.session && (
                  <span className="replay-session mono small" data-testid="replay-event-session" title="The session it ran in">
                    session {e.session}
                  </span>
                )}
                <CwdOf e={e} />
                {typeof e.exitCode === 'number' && e.exitCode !== 0 && <span className="text-warn small"> exit {e.exitCode}</span>}
                {e.error && <span className="text-warn small"> {e.error}</span>}
                {e.warnings?.map((w) => (
                  <span key={w} className="text-warn small replay-warning" data-testid="replay-event-warning">
                    {' '}
                    ⚠ {w}
                  </span>
                ))}
              </button>
            </li>
          );
        })}
      </ol>
    </section>
  );
}
