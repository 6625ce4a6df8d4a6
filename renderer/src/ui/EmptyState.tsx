export type QuickKind = 'desktop' | 'terminal';

interface Props {
  busy: QuickKind | null;
  error: { message: string; hint?: string } | null;
  onQuick: (kind: QuickKind) => void;
  /** The full create dialog (other backends, images, names). */
  onOther: () => void;
}

/** What a first start shows: one "No sandboxes yet" and the two sandboxes most people want, one click each. */
export function EmptyState({ busy, error, onQuick, onOther }: Props) {
  return (
    <div className="empty-state" data-testid="sandbox-empty">
      <h2>No sandboxes yet</h2>
      <p className="muted">
        A sandbox is an isolated machine for you and your agents: a terminal, and with the desktop image a screen too.
      </p>
      <div className="empty-actions">
        <button
          className="btn btn-primary empty-action"
          data-testid="empty-create-desktop"
          disabled={busy !== null}
          onClick={() => onQuick('desktop')}
        >
          <b>{busy === 'desktop' ? 'Creating…' : 'Desktop sandbox'}</b>
          <span className="small">Docker · sandbox-desk/desktop — terminal and a bot desktop (Chromium)</span>
        </button>
        <button
          className="btn empty-action"
          data-testid="empty-create-terminal"
          disabled={busy !== null}
          onClick={() => onQuick('terminal')}
        >
          <b>{busy === 'terminal' ? 'Creating…' : 'Terminal-only sandbox'}</b>
          <span className="small">Docker · sandbox-desk/base — a shell, nothing else</span>
        </button>
      </div>
      <button className="link small" disabled={busy !== null} onClick={onOther}>
        Other backend, image or name…
      </button>
      {error && (
        <div className="notice notice-error" role="alert">
          {error.message}
          {error.hint && <span className="hint"> {error.hint}</span>}
        </div>
      )}
    </div>
  );
}
