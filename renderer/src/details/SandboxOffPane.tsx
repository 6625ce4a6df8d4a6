import { useState } from 'react';
import type { SandboxInfo } from '../../../src/api/contract.js';
import { describeError } from '../app/api-client.js';
import { useApi } from '../app/api-context.js';
import { ago } from '../ui/format.js';
import { useNow } from '../hooks/useNow.js';

/**
 * The workspace of a sandbox that does not run: "Stopped 10 s ago" and a Start button right there —
 * the backend's own wording (a container's exit code and RFC 3339 stop time) only as a tooltip. A
 * missing or unreachable sandbox says why and what to do instead.
 */
export function SandboxOffPane({ sandbox, onStarted }: { sandbox: SandboxInfo; onStarted?: () => void }) {
  const api = useApi();
  const now = useNow();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<{ message: string; hint?: string } | null>(null);

  async function start() {
    setBusy(true);
    setError(null);
    try {
      await api.call('startSandbox', { name: sandbox.name });
      onStarted?.();
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  }

  if (sandbox.state === 'stopped') {
    return (
      <div className="center empty workspace-off" data-testid="workspace-stopped">
        <h4 title={sandbox.stateDetail ?? undefined}>Stopped{sandbox.stateSince ? ` ${ago(sandbox.stateSince, now)}` : ''}</h4>
        <p className="muted">Start it to open its terminals and desktop.</p>
        <button className="btn btn-primary" data-testid="workspace-start" disabled={busy} onClick={() => void start()}>
          {busy ? 'Starting…' : 'Start'}
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
  if (sandbox.operation || sandbox.state === 'creating' || sandbox.state === 'starting' || sandbox.state === 'stopping') {
    return (
      <div className="center empty workspace-off" data-testid="workspace-busy">
        <p>
          <b>{sandbox.name}</b> is {sandbox.state}.
        </p>
        <p className="muted">Its terminals and desktop open once it is ready (see its progress in Details or the sidebar).</p>
      </div>
    );
  }
  return (
    <div className="center empty workspace-off">
      <p>
        <b>{sandbox.name}</b> is {sandbox.state}.
      </p>
      <p className="muted">
        {sandbox.state === 'missing'
          ? `It no longer exists in its backend (${sandbox.stateDetail ?? 'no reason given'}); remove it and create it again.`
          : `Its backend cannot be asked right now: ${sandbox.stateDetail ?? 'no reason given'}`}
      </p>
    </div>
  );
}
