import { useState } from 'react';
import type { ReplayExportResult } from '../../../src/shared/replay-types.js';
import { describeError } from '../app/api-client.js';
import { useApi } from '../app/api-context.js';
import { exportRangeProblem, parseExportTime } from './export-range.js';
import { useKeptExportForm } from './kept-export-form.js';
import { replayCall } from './replay-api.js';
import type { Span } from './timeline.js';

interface Props {
  sandbox: string;
  /** The recording's span: From/To positions (1:30) count from its start. */
  span: Span;
}

/**
 * Export from the window: a folder path (typed — browser mode has no file dialog, and the app's
 * preload offers none yet), the format, an optional range (From/To: a position in the recording, a
 * duration ago or ISO, checked as typed), then `replayExport`. The core runs it as a tracked
 * operation, so its progress (and a failure, with what to do) shows in the task list; the result
 * lists what was written. The fields are kept when the tab changes.
 */
export function ReplayExport({ sandbox, span }: Props) {
  const api = useApi();
  const [{ out, format, from, to }, update] = useKeptExportForm(sandbox);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<ReplayExportResult | null>(null);
  const [error, setError] = useState<{ message: string; hint?: string } | null>(null);
  const bad =
    out.trim() !== '' && !out.trim().startsWith('/') ? 'Give an absolute folder path on this machine, e.g. /tmp/replay-export.' : null;
  const rangeProblem = exportRangeProblem(from, to, span);

  const run = async () => {
    setBusy(true);
    setError(null);
    setResult(null);
    try {
      // Sent as ISO: a duration ago means ago from now, when Export is pressed.
      const f = parseExportTime(from, 'From', span);
      const t = parseExportTime(to, 'To', span);
      setResult(
        await replayCall(api, 'replayExport', {
          sandbox,
          out: out.trim(),
          format,
          ...(f !== undefined ? { from: new Date(f).toISOString() } : {}),
          ...(t !== undefined ? { to: new Date(t).toISOString() } : {}),
        }),
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
        if (!bad && !rangeProblem && out.trim()) void run();
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
          onChange={(e) => update({ out: e.currentTarget.value })}
        />
      </label>
      <label>
        Format{' '}
        <select
          className="input"
          data-testid="replay-export-format"
          value={format}
          onChange={(e) => update({ format: e.currentTarget.value as 'mp4' | 'webm' })}
        >
          <option value="mp4">MP4</option>
          <option value="webm">WebM</option>
        </select>
      </label>
      <label>
        From{' '}
        <input
          className="input mono replay-export-time"
          data-testid="replay-export-from"
          value={from}
          placeholder="start"
          aria-invalid={rangeProblem ? true : undefined}
          aria-describedby="replay-export-range-help"
          onChange={(e) => update({ from: e.currentTarget.value })}
        />
      </label>
      <label>
        To{' '}
        <input
          className="input mono replay-export-time"
          data-testid="replay-export-to"
          value={to}
          placeholder="end"
          aria-invalid={rangeProblem ? true : undefined}
          aria-describedby="replay-export-range-help"
          onChange={(e) => update({ to: e.currentTarget.value })}
        />
      </label>
      <button
        type="submit"
        className="btn btn-small"
        data-testid="replay-export"
        disabled={busy || !out.trim() || Boolean(bad) || Boolean(rangeProblem)}
      >
        {busy ? 'Exporting… (see the task list)' : 'Export'}
      </button>
      <span className="muted small" id="replay-export-range-help">
        From/To: a position in the recording (1:30), a duration ago (10m) or an ISO time; empty: its start/end.
      </span>
      {rangeProblem && (
        <span className="text-warn small" role="alert" data-testid="replay-export-range-problem">
          {rangeProblem.message} {rangeProblem.hint}
        </span>
      )}
      {bad && (
        <span className="text-warn small" role="alert">
          {bad}
        </span>
      )}
      {error && (
        <div className="notice notice-error" role="alert" data-testid="replay-export-error">
          {error.message}
          {error.hint && <span className="muted small">{error.hint}</span>}
          <span className="muted small">It is also in the task list.</span>
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
            {result.video?.gaps.map((g) => (
              <li key={g.from} data-testid="replay-export-gap">
                not recorded {g.from} – {g.to} ({g.what}): shown as a card in the video
              </li>
            ))}
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
