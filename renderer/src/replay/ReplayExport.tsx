import { useState } from 'react';
import type { ReplayExportResult } from '../../../src/shared/replay-types.js';
import { describeError } from '../app/api-client.js';
import { useApi } from '../app/api-context.js';
import { replayCall } from './replay-api.js';

interface Props {
  sandbox: string;
  /** The range to export (ISO); undefined: the whole recording. */
  from?: string;
  to?: string;
}

/**
 * Export from the window: a folder path (typed — browser mode has no file dialog, and the app's
 * preload offers none yet), the format, then `replayExport`. The core runs it as a tracked operation,
 * so its progress shows in the task list; the result lists what was written.
 */
export function ReplayExport({ sandbox, from, to }: Props) {
  const api = useApi();
  const [out, setOut] = useState('');
  const [format, setFormat] = useState<'mp4' | 'webm'>('mp4');
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<ReplayExportResult | null>(null);
  const [error, setError] = useState<{ message: string; hint?: string } | null>(null);
  const bad =
    out.trim() !== '' && !out.trim().startsWith('/') ? 'Give an absolute folder path on this machine, e.g. /tmp/replay-export.' : null;

  const run = async () => {
    setBusy(true);
    setError(null);
    setResult(null);
    try {
      setResult(
        await replayCall(api, 'replayExport', { sandbox, out: out.trim(), format, ...(from ? { from } : {}), ...(to ? { to } : {}) }),
      );
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      className="replay-export"
      aria-label="Export the recording"
      onSubmit={(e) => {
        e.preventDefault();
        if (!bad && out.trim()) void run();
      }}
    >
      <label>
        Export to folder{' '}
        <input
          className="input mono"
          data-testid="replay-export-out"
          value={out}
          placeholder="/tmp/replay-export"
          aria-invalid={bad ? true : undefined}
          onChange={(e) => setOut(e.currentTarget.value)}
        />
      </label>
      <label>
        Format{' '}
        <select
          className="input"
          data-testid="replay-export-format"
          value={format}
          onChange={(e) => setFormat(e.currentTarget.value as 'mp4' | 'webm')}
        >
          <option value="mp4">MP4</option>
          <option value="webm">WebM</option>
        </select>
      </label>
      <button type="submit" className="btn btn-small" data-testid="replay-export" disabled={busy || !out.trim() || Boolean(bad)}>
        {busy ? 'Exporting… (see the task list)' : 'Export'}
      </button>
      {bad && (
        <span className="text-warn small" role="alert">
          {bad}
        </span>
      )}
      {error && (
        <div className="notice notice-error" role="alert" data-testid="replay-export-error">
          {error.message}
          {error.hint && <span className="muted small">{error.hint}</span>}
        </div>
      )}
      {result && (
        <div className="notice notice-ok replay-export-result" role="status" data-testid="replay-export-result">
          <span>Exported to {result.dir}:</span>
          <ul className="mono small">
            {result.video && (
              <li data-testid="replay-export-video">
                {result.video.file} ({(result.video.durationMs / 1000).toFixed(1)} s, {result.video.width}×{result.video.height})
              </li>
            )}
            {result.casts.map((c) => (
              <li key={c} data-testid="replay-export-cast">
                {c}
              </li>
            ))}
            <li data-testid="replay-export-events">{result.events}</li>
          </ul>
        </div>
      )}
    </form>
  );
}
