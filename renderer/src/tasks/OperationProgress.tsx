import { useState } from 'react';
import type { SandboxOperation } from '../../../src/api/contract.js';
import { describeError } from '../app/api-client.js';
import { useApi } from '../app/api-context.js';
import { usePoll } from '../hooks/usePoll.js';
import { touches } from '../events/topics.js';

interface Props {
  sandbox: string;
  /** Hides the panel; the work goes on and its latest step shows in the sidebar row. */
  onBackground: () => void;
  /** `floating`: above the create dialog, which is modal while it waits. */
  floating?: boolean;
}

const VERB: Record<SandboxOperation['kind'], string> = {
  create: 'Creating',
  start: 'Starting',
  stop: 'Stopping',
  checkpoint: 'Saving a checkpoint of',
  restore: 'Restoring',
  fork: 'Forking',
};

/** Seconds since the operation began, as the CLI prints them ("  3.2 s"). */
export function offset(startedAt: string, at: string): string {
  return `${Math.max(0, (Date.parse(at) - Date.parse(startedAt)) / 1000).toFixed(1)} s`;
}

/**
 * The long work on one sandbox (a VM's create/start/stop takes minutes under TCG): the timestamped
 * step list the CLI prints, Cancel (the core stops the boot and removes what a create made), and
 * *Continue in background*. Polls the core's progress, so it shows work any client started.
 */
export function OperationProgress({ sandbox, onBackground, floating }: Props) {
  const api = useApi();
  const poll = usePoll(() => api.call('sandboxProgress', { name: sandbox }), 1000, sandbox, true, { live: touches.operationOf(sandbox) });
  const [asked, setAsked] = useState(false);
  const [error, setError] = useState<{ message: string; hint?: string } | null>(null);
  const op = poll.data;
  if (!op || op.done) return null;
  const cancelling = op.cancelled || asked;

  const cancel = async () => {
    setAsked(true);
    setError(null);
    try {
      await api.call('cancelOperation', { name: sandbox });
      await poll.refresh();
    } catch (err) {
      setAsked(false);
      setError(describeError(err));
    }
  };

  return (
    <section
      className={`op-progress${floating ? ' op-progress-floating' : ''}`}
      role="region"
      aria-label={`${VERB[op.kind]} ${sandbox}`}
      data-testid="operation-progress"
      // Floating above the modal create dialog, its Cancel is part of that dialog's focus cycle (focus-trap.ts).
      {...(floating ? { 'data-dialog-companion': '' } : {})}
    >
      <header className="op-head">
        <span className="spinner" aria-hidden="true" />
        <b>
          {cancelling ? 'Cancelling' : VERB[op.kind]} {sandbox}…
        </b>
        <span className="muted small">{offset(op.startedAt, new Date().toISOString())}</span>
      </header>
      <ol className="op-steps mono" aria-live="polite">
        {op.events.map((e, i) => (
          <li key={i} className={e.level === 'warning' ? 'progress-warning' : undefined}>
            <span className="op-at">{offset(op.startedAt, e.at).padStart(7)}</span> <span className="op-step">{e.step}</span>: {e.message}
          </li>
        ))}
        {op.events.length === 0 && <li className="muted">waiting for the first step…</li>}
      </ol>
      {error && (
        <div className="notice notice-error" role="alert">
          {error.message}
          {error.hint && <span className="hint"> {error.hint}</span>}
        </div>
      )}
      <footer className="op-actions">
        {op.cancellable && (
          <button className="btn btn-danger-quiet" data-testid="operation-cancel" disabled={cancelling} onClick={() => void cancel()}>
            {cancelling ? 'Cancelling…' : 'Cancel'}
          </button>
        )}
        <button className="btn" data-testid="operation-background" onClick={onBackground}>
          Continue in background
        </button>
        {op.kind === 'create' && op.cancellable && <span className="muted small">Cancel stops it and removes what was made so far.</span>}
      </footer>
    </section>
  );
}
