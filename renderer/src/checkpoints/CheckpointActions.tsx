import { useState } from 'react';
import type { SandboxInfo } from '../../../src/api/contract.js';
import { describeError } from '../app/api-client.js';
import { useApi } from '../app/api-context.js';
import { useSandboxProgress } from '../hooks/useSandboxProgress.js';

interface Props {
  sandbox: SandboxInfo;
  /** After a checkpoint, pause or resume: refresh now rather than at the next poll. */
  onChanged: () => void;
}

/**
 * The toolbar's Checkpoint button (with the backend's progress while it saves) and Pause / Resume.
 * Restore and fork live in the Details' checkpoints panel, where the list to choose from is.
 */
export function CheckpointActions({ sandbox, onChanged }: Props) {
  const api = useApi();
  const [busy, setBusy] = useState<'checkpoint' | 'pause' | 'resume' | null>(null);
  const [note, setNote] = useState<{ text: string; bad: boolean } | null>(null);
  const progress = useSandboxProgress(busy === 'checkpoint' ? sandbox.name : null);
  const paused = sandbox.state === 'paused';
  const canCheckpoint = ['running', 'stopped', 'paused'].includes(sandbox.state) && sandbox.operation === null;

  async function act(what: 'checkpoint' | 'pause' | 'resume') {
    setBusy(what);
    setNote(null);
    try {
      if (what === 'checkpoint') {
        const r = await api.call('checkpointSandbox', { sandbox: sandbox.name });
        const disk = r.warnings.find((w) => w.code === 'checkpoint_disk_only');
        setNote({ text: `Checkpoint ${r.checkpoint.id} saved${disk ? ' (disk only: the sandbox is stopped)' : ''}.`, bad: false });
      } else if (what === 'pause') await api.call('pauseSandbox', { name: sandbox.name });
      else await api.call('resumeSandbox', { name: sandbox.name });
      onChanged();
    } catch (err) {
      const e = describeError(err);
      setNote({ text: e.hint ? `${e.message} — ${e.hint}` : e.message, bad: true });
    } finally {
      setBusy(null);
    }
  }

  return (
    <div className="actions checkpoint-actions">
      <button
        className="btn"
        data-testid="sandbox-checkpoint"
        disabled={busy !== null || !canCheckpoint}
        title="Save the sandbox's disk and every session's working directory; restore or fork it from Details"
        onClick={() => void act('checkpoint')}
      >
        {busy === 'checkpoint' ? 'Saving…' : 'Checkpoint'}
      </button>
      {busy === 'checkpoint' && progress && (
        <span className="progress" role="status" data-testid="checkpoint-progress">
          {progress.message}
        </span>
      )}
      {(sandbox.state === 'running' || paused) && (
        <button
          className="btn"
          data-testid={paused ? 'sandbox-resume' : 'sandbox-pause'}
          disabled={busy !== null}
          title={paused ? 'Thaw every process' : 'Freeze every process (commands wait until you resume)'}
          onClick={() => void act(paused ? 'resume' : 'pause')}
        >
          {busy === 'pause' ? 'Pausing…' : busy === 'resume' ? 'Resuming…' : paused ? 'Resume' : 'Pause'}
        </button>
      )}
      {note && (
        <div className={`notice ${note.bad ? 'notice-error' : 'notice-ok'} actions-error`} role={note.bad ? 'alert' : 'status'}>
          {note.text}
          <button className="btn-icon" aria-label="Dismiss" onClick={() => setNote(null)}>
            ×
          </button>
        </div>
      )}
    </div>
  );
}
