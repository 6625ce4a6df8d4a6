import { useState } from 'react';
import type { SandboxInfo } from '../../../src/api/contract.js';
import { describeError } from '../app/api-client.js';
import { useApi } from '../app/api-context.js';
import { useSandboxProgress } from '../hooks/useSandboxProgress.js';
import { ConfirmPopover } from '../ui/ConfirmPopover.js';

interface Props {
  sandbox: SandboxInfo;
  /** After start/stop: refresh the list now rather than at the next poll. */
  onChanged: () => void;
  onRemoved: (name: string) => void;
}

type Busy = 'start' | 'stop' | 'remove' | null;

/**
 * Start / Stop / Remove for the selected sandbox. Remove asks first and says what it will do; Stop
 * asks first when the sandbox has open terminals (their shells end with it), naming how many.
 */
export function SandboxActions({ sandbox, onChanged, onRemoved }: Props) {
  const api = useApi();
  const [busy, setBusy] = useState<Busy>(null);
  const [confirming, setConfirming] = useState(false);
  /** Stop asked to be confirmed: this many terminals would end. */
  const [stopping, setStopping] = useState<number | null>(null);
  const [error, setError] = useState<{ message: string; hint?: string } | null>(null);
  const running = sandbox.state === 'running';
  const progress = useSandboxProgress(busy === 'start' || busy === 'stop' ? sandbox.name : null);

  // Every failure ends in the error line, so the buttons fire and forget: onClick={() => void act(…)}.
  async function act(what: Exclude<Busy, null>, fn: () => Promise<unknown>) {
    setBusy(what);
    setError(null);
    try {
      await fn();
      if (what === 'remove') onRemoved(sandbox.name);
      else onChanged();
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(null);
      setConfirming(false);
      setStopping(null);
    }
  }

  const stop = () => api.call('stopSandbox', { name: sandbox.name });

  // Stopping ends the sandbox's shells: with terminals open, say how many and ask first.
  async function askStop() {
    setError(null);
    const open = await api.call('listTerminals', { sandbox: sandbox.name }).catch(() => []);
    if (open.length) setStopping(open.length);
    else await act('stop', stop);
  }

  return (
    <div className="actions">
      {running ? (
        <button className="btn" data-testid="sandbox-stop" disabled={busy !== null} onClick={() => void askStop()}>
          {busy === 'stop' ? 'Stopping…' : 'Stop'}
        </button>
      ) : (
        <button
          className="btn"
          data-testid="sandbox-start"
          disabled={busy !== null || sandbox.operation !== null || sandbox.state === 'missing' || sandbox.state === 'unavailable'}
          title={sandbox.state === 'missing' ? (sandbox.stateDetail ?? 'the sandbox no longer exists in its backend') : undefined}
          onClick={() => void act('start', () => api.call('startSandbox', { name: sandbox.name }))}
        >
          {busy === 'start' ? 'Starting…' : 'Start'}
        </button>
      )}
      {progress && (
        <span
          className={progress.level === 'warning' ? 'progress progress-warning' : 'progress'}
          role="status"
          data-testid="sandbox-progress"
        >
          {progress.message}
        </span>
      )}
      <button className="btn btn-danger-quiet" data-testid="sandbox-remove" disabled={busy !== null} onClick={() => setConfirming(true)}>
        Remove
      </button>
      {confirming && (
        <ConfirmPopover
          label={`Remove ${sandbox.name}`}
          action={{
            text: busy === 'remove' ? 'Removing…' : 'Remove',
            testId: 'confirm-remove',
            disabled: busy !== null,
            onClick: () => void act('remove', () => api.call('removeSandbox', { name: sandbox.name, force: running })),
          }}
          onCancel={() => setConfirming(false)}
          cancelDisabled={busy !== null}
        >
          Remove <b>{sandbox.name}</b>? Its {sandbox.backend === 'docker' ? 'container' : 'environment'} and session records are deleted
          {running ? '; it is running and will be stopped first (force)' : ''}.
        </ConfirmPopover>
      )}
      {stopping !== null && (
        <ConfirmPopover
          label={`Stop ${sandbox.name}`}
          action={{
            text: busy === 'stop' ? 'Stopping…' : 'Stop',
            testId: 'confirm-stop',
            disabled: busy !== null,
            onClick: () => void act('stop', stop),
          }}
          onCancel={() => setStopping(null)}
          cancelDisabled={busy !== null}
        >
          Stop <b>{sandbox.name}</b>? It has {stopping === 1 ? '1 open terminal' : `${stopping} open terminals`}; stopping ends{' '}
          {stopping === 1 ? 'its shell' : 'their shells'} (and anything running in {stopping === 1 ? 'it' : 'them'}).
        </ConfirmPopover>
      )}
      {error && (
        <div className="notice notice-error actions-error" role="alert">
          {error.message}
          {error.hint && <span className="hint"> {error.hint}</span>}
          <button className="btn-icon" aria-label="Dismiss" onClick={() => setError(null)}>
            ×
          </button>
        </div>
      )}
    </div>
  );
}
