import type { SandboxInfo } from '../../src/api/contract.js';
import type { Poll } from './hooks/usePoll.js';

interface Props {
  poll: Poll<SandboxInfo[]>;
  selected: string | null;
  onSelect: (name: string) => void;
  onCreate: () => void;
}

/** The left sidebar: every sandbox with its live state; the list itself is polled by the App. */
export function SandboxList({ poll, selected, onSelect, onCreate }: Props) {
  const sandboxes = poll.data;
  return (
    <aside className="sidebar">
      <div className="sidebar-head">
        <span className="sidebar-title">Sandboxes</span>
        <button className="btn btn-primary btn-small" data-testid="create-sandbox" onClick={onCreate} title="New sandbox (Ctrl+Shift+N)">
          + New
        </button>
      </div>
      {poll.error && (
        <div className="notice notice-error sidebar-error" role="alert">
          {poll.error.message}
          {poll.error.hint && <div className="hint">{poll.error.hint}</div>}
        </div>
      )}
      {poll.loading && !sandboxes && !poll.error && <div className="empty muted">Loading sandboxes…</div>}
      {sandboxes && sandboxes.length === 0 && (
        <div className="empty" data-testid="sandbox-empty">
          <p>No sandboxes yet.</p>
          <p className="muted">
            Create one with <b>+ New</b> (Ctrl+Shift+N): a Docker container with image <code>sandbox-desk/base:latest</code>, or{' '}
            <code>sandbox-desk/desktop:latest</code> for one with a bot desktop.
          </p>
        </div>
      )}
      <ul className="sandbox-list" role="listbox" aria-label="Sandboxes">
        {sandboxes?.map((s) => (
          <li
            key={s.name}
            role="option"
            aria-selected={s.name === selected}
            className={`sandbox-row${s.name === selected ? ' selected' : ''}`}
            data-testid={`sandbox-row-${s.name}`}
            onClick={() => onSelect(s.name)}
            title={s.stateDetail ?? undefined}
          >
            <div className="sandbox-row-line">
              <span className="sandbox-name">{s.name}</span>
              <StateBadge state={s.state} testId={`sandbox-state-${s.name}`} />
            </div>
            <div className="sandbox-row-line muted small">
              <span className="backend-tag">{s.backend}</span>
              <span className="ellipsis" title={s.image ?? undefined}>
                {s.image ?? 'no image'}
              </span>
            </div>
          </li>
        ))}
      </ul>
    </aside>
  );
}

export function StateBadge({ state, testId }: { state: SandboxInfo['state']; testId?: string }) {
  return (
    <span className={`state state-${state}`} data-testid={testId}>
      <span className="dot" aria-hidden="true" />
      {state}
    </span>
  );
}
