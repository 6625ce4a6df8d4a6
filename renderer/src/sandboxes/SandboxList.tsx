import { useRef, type KeyboardEvent } from 'react';
import type { SandboxInfo } from '../../../src/api/contract.js';
import type { PoolsView } from '../../../src/shared/pool-types.js';
import type { Poll } from '../hooks/usePoll.js';
import { SandboxResources } from '../details/ResourceGraph.js';
import { PoolSection } from './PoolSection.js';

interface Props {
  poll: Poll<SandboxInfo[]>;
  selected: string | null;
  onSelect: (name: string) => void;
  onCreate: () => void;
  /** The New button's shortcut as this mode shows it (browser mode: Alt+Shift+N). */
  newShortcut: string;
  /** The warm pools, shown at the foot (polled by the App; undefined until the first answer). */
  pools?: PoolsView | undefined;
}

/** The row arrow keys move to from `at` (wrapping is not done: the ends stay put, like a native listbox). */
export function rowAfterKey(key: string, at: number, count: number): number | null {
  if (count === 0) return null;
  if (key === 'ArrowDown') return Math.min(at + 1, count - 1);
  if (key === 'ArrowUp') return Math.max(at - 1, 0);
  if (key === 'Home') return 0;
  if (key === 'End') return count - 1;
  return null;
}

/**
 * The left sidebar: every sandbox with its live state (and the step of work under way on it); the
 * list itself is polled by the App. A listbox with one tab stop: arrow keys, Home and End move the
 * selection and the focus.
 */
export function SandboxList({ poll, selected, onSelect, onCreate, newShortcut, pools }: Props) {
  const sandboxes = poll.data;
  const listRef = useRef<HTMLUListElement>(null);
  const selectedIndex = sandboxes
    ? Math.max(
        0,
        sandboxes.findIndex((s) => s.name === selected),
      )
    : 0;

  const onKeyDown = (e: KeyboardEvent<HTMLUListElement>) => {
    if (!sandboxes) return;
    const next = rowAfterKey(e.key, selectedIndex, sandboxes.length);
    if (next === null) return;
    e.preventDefault();
    onSelect(sandboxes[next]!.name);
    listRef.current?.querySelectorAll<HTMLElement>('[role="option"]')[next]?.focus();
  };

  return (
    <aside className="sidebar">
      <div className="sidebar-head">
        <span className="sidebar-title">Sandboxes</span>
        <button
          className="btn btn-primary btn-small"
          data-testid="create-sandbox"
          onClick={onCreate}
          title={`New sandbox (${newShortcut})`}
        >
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
      <ul className="sandbox-list" role="listbox" aria-label="Sandboxes" ref={listRef} onKeyDown={onKeyDown}>
        {sandboxes?.map((s, i) => (
          <li
            key={s.name}
            role="option"
            aria-selected={s.name === selected}
            tabIndex={i === selectedIndex ? 0 : -1}
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
              <span className="backend-tag" data-testid={`sandbox-network-${s.name}`} title="network policy (docs/network-policy.md)">
                net: {s.network?.mode ?? 'open'}
              </span>
              <span className="ellipsis" title={s.image ?? undefined}>
                {s.image ?? 'no image'}
              </span>
            </div>
            {s.state === 'running' && (
              <div className="sandbox-row-line muted small">
                <SandboxResources sandbox={s.name} running compact />
              </div>
            )}
            {s.operation && (
              <div
                className="sandbox-row-line small sandbox-row-op"
                data-testid={`sandbox-op-${s.name}`}
                title={s.operation.message ?? undefined}
              >
                <span className="spinner" aria-hidden="true" />
                <span className="ellipsis">{s.operation.cancelled ? 'cancelling…' : (s.operation.message ?? `${s.operation.kind}…`)}</span>
              </div>
            )}
          </li>
        ))}
      </ul>
      <PoolSection view={pools} />
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
