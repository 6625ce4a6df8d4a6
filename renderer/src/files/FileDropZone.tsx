import { useRef, useState, type DragEvent, type ReactNode } from 'react';
import { describeError } from '../app/api-client.js';
import { useApi } from '../app/api-context.js';
import { Toast } from '../ui/ToastStack.js';
import { formatBytes, uploadFiles, type UploadProgress } from './file-transfer.js';

interface Props {
  sandbox: string;
  /** Whose cwd the files land in (the active terminal's session; default session when none). */
  session?: string | undefined;
  /** Where in the session's cwd (relative or absolute); default the cwd itself. */
  dir?: string | undefined;
  /** Called after files landed (the file panel refreshes). */
  onUploaded?: (paths: string[]) => void;
  className?: string;
  testId?: string;
  children: ReactNode;
}

type Toast =
  | { kind: 'progress'; p: UploadProgress & { index: number; count: number } }
  | { kind: 'ok'; paths: string[] }
  | { kind: 'error'; message: string; hint?: string | undefined };

/** Is this drag carrying files (not text or a link from another page)? */
const hasFiles = (e: DragEvent) => Array.from(e.dataTransfer?.types ?? []).includes('Files');

/**
 * Drop files here → they upload into the session's cwd, and a toast says the path the sandbox
 * measured (or why not). Wraps the terminal, the screen and the details view.
 */
export function FileDropZone({ sandbox, session, dir, onUploaded, className, testId, children }: Props) {
  const api = useApi();
  const [over, setOver] = useState(false);
  const [toast, setToast] = useState<Toast | null>(null);
  const depth = useRef(0);
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);

  const show = (t: Toast | null, forMs?: number) => {
    if (timer.current) clearTimeout(timer.current);
    setToast(t);
    if (forMs) timer.current = setTimeout(() => setToast(null), forMs);
  };

  const onDrop = (e: DragEvent) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    e.stopPropagation();
    depth.current = 0;
    setOver(false);
    const files = Array.from(e.dataTransfer.files);
    if (!files.length) return;
    void uploadFiles(api, { sandbox, session, dir }, files, (p) => show({ kind: 'progress', p }))
      .then((done) => {
        show({ kind: 'ok', paths: done.map((d) => d.path) }, 8000);
        onUploaded?.(done.map((d) => d.path));
      })
      .catch((err: unknown) => {
        const d = describeError(err);
        show({ kind: 'error', message: d.message, hint: d.hint });
      });
  };

  return (
    <div
      className={`drop-zone${over ? ' drop-over' : ''}${className ? ` ${className}` : ''}`}
      data-testid={testId}
      onDragEnter={(e) => {
        if (!hasFiles(e)) return;
        depth.current += 1;
        setOver(true);
      }}
      onDragOver={(e) => {
        if (!hasFiles(e)) return;
        // Without this the browser opens the file instead of dropping it here.
        e.preventDefault();
        e.dataTransfer.dropEffect = 'copy';
      }}
      onDragLeave={(e) => {
        if (!hasFiles(e)) return;
        depth.current = Math.max(0, depth.current - 1);
        if (depth.current === 0) setOver(false);
      }}
      onDrop={onDrop}
    >
      {children}
      {over && <div className="drop-hint">Drop to upload into {dir ?? 'the session’s cwd'}</div>}
      {toast && (
        <Toast>
          <div
            className={`drop-toast notice ${toast.kind === 'error' ? 'notice-error' : toast.kind === 'ok' ? 'notice-ok' : ''}`}
            role={toast.kind === 'error' ? 'alert' : 'status'}
            data-testid="upload-toast"
          >
            {toast.kind === 'progress' && (
              <span>
                Uploading {toast.p.name}
                {toast.p.count > 1 ? ` (${toast.p.index + 1} of ${toast.p.count})` : ''} — {formatBytes(toast.p.sent)} of{' '}
                {formatBytes(toast.p.total)}
                <progress max={toast.p.total || 1} value={toast.p.sent} />
              </span>
            )}
            {toast.kind === 'ok' && (
              <span>
                Uploaded to{' '}
                {toast.paths.map((p) => (
                  <code key={p} data-testid="upload-path">
                    {p}
                  </code>
                ))}
              </span>
            )}
            {toast.kind === 'error' && (
              <>
                <span>Upload failed: {toast.message}</span>
                {toast.hint && <span className="small">{toast.hint}</span>}
              </>
            )}
            {toast.kind !== 'progress' && (
              <button type="button" className="btn-icon" aria-label="Dismiss" onClick={() => show(null)}>
                ×
              </button>
            )}
          </div>
        </Toast>
      )}
    </div>
  );
}
