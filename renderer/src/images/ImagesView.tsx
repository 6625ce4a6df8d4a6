import { useEffect, useRef, useState, type FormEvent } from 'react';
import type { ImageInfo, ImageListing, ImageTask } from '../../../src/api/contract.js';
import { describeError } from '../app/api-client.js';
import { useApi } from '../app/api-context.js';
import { humanSize } from '../sandboxes/create-form.js';
import { useFocusTrap } from '../ui/focus-trap.js';
import { useInterval } from '../hooks/useInterval.js';
import { usePoll } from '../hooks/usePoll.js';
import { touches } from '../events/topics.js';

interface Props {
  onClose: () => void;
}

/** Lines of a build's log shown at once (the task keeps more; the newest matter). */
const LOG_LINES = 400;

/**
 * The Images view: the Docker and VM images the app made or uses (sizes, users, desktop parts),
 * a build from a folder with its steps streaming in and Cancel, removal with confirmation.
 */
export function ImagesView({ onClose }: Props) {
  const api = useApi();
  const list = usePoll<ImageListing>(() => api.call('listImages', {}), 5000, 'images', true, { live: touches.images });
  const [confirm, setConfirm] = useState<ImageInfo | null>(null);
  const [notice, setNotice] = useState<{ text: string; bad: boolean } | null>(null);

  const remove = async (img: ImageInfo) => {
    setConfirm(null);
    try {
      await api.call('removeImage', { ref: img.ref });
      setNotice({ text: `Removed ${img.ref}.`, bad: false });
    } catch (err) {
      const d = describeError(err);
      setNotice({ text: d.hint ? `${d.message} — ${d.hint}` : d.message, bad: true });
    }
    void list.refresh();
  };

  // Modal: the focus stays inside and goes back to the opener (the Images button) on close.
  const dialogRef = useRef<HTMLElement>(null);
  useFocusTrap(dialogRef);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => e.key === 'Escape' && onClose();
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [onClose]);

  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <section
        ref={dialogRef}
        className="modal modal-wide"
        role="dialog"
        aria-modal="true"
        aria-labelledby="images-title"
        data-testid="images-view"
      >
        <header className="images-head">
          <h2 id="images-title">Images</h2>
          <button className="btn-icon" aria-label="Close" onClick={onClose}>
            ×
          </button>
        </header>
        {notice && (
          <div className={`notice ${notice.bad ? 'notice-warn' : 'notice-ok'}`} role="status" data-testid="images-notice">
            {notice.text}
          </div>
        )}
        {list.data?.warnings.map((w) => (
          <div className="notice notice-warn" key={w}>
            {w}
          </div>
        ))}
        {list.error && <div className="notice notice-error">{list.error.message}</div>}
        <div className="images-table-wrap">
          <table className="table images-table" data-testid="images-table">
            <thead>
              <tr>
                <th>Image</th>
                <th>Kind</th>
                <th>Size</th>
                <th>Created</th>
                <th>Desktop</th>
                <th>Used by</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {list.data?.images.map((i) => (
                <tr key={`${i.kind}:${i.ref}`} data-testid={`image-row-${i.ref}`}>
                  <td className="mono">
                    {i.ref}
                    {i.derivedFrom && <div className="muted small">desktop variant of {i.derivedFrom}</div>}
                  </td>
                  <td>{i.kind === 'vm' ? 'VM' : i.kind === 'vm-template' ? 'VM template' : 'Docker'}</td>
                  <td>{humanSize(i.sizeBytes)}</td>
                  <td className="muted small">{i.createdAt ? new Date(i.createdAt).toLocaleString() : '-'}</td>
                  <td>{i.desktop === null ? <span className="muted">unknown</span> : i.desktop ? 'yes' : 'no'}</td>
                  <td>{i.usedBy.length ? i.usedBy.join(', ') : <span className="muted">none</span>}</td>
                  <td>
                    {confirm === i ? (
                      <span className="confirm">
                        Remove?{' '}
                        <button className="btn btn-danger" data-testid={`image-rm-yes-${i.ref}`} onClick={() => void remove(i)}>
                          Remove
                        </button>{' '}
                        {/* The safe choice takes the focus: Enter on a stray keypress keeps the image. */}
                        <button className="btn" autoFocus onClick={() => setConfirm(null)}>
                          Keep
                        </button>
                      </span>
                    ) : (
                      <button
                        className="btn"
                        data-testid={`image-rm-${i.ref}`}
                        onClick={() => setConfirm(i)}
                        title={i.usedBy.length ? `used by ${i.usedBy.join(', ')}: removal will be refused` : undefined}
                      >
                        Remove
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {list.data && list.data.images.length === 0 && <p className="muted">No images yet: build one below.</p>}
        </div>
        <BuildForm onBuilt={() => void list.refresh()} />
      </section>
    </div>
  );
}

/** Build from a folder: tag + absolute folder path; the task's steps and output stream in; Cancel stops it. */
function BuildForm({ onBuilt }: { onBuilt: () => void }) {
  const api = useApi();
  const [tag, setTag] = useState('');
  const [context, setContext] = useState('');
  const [task, setTask] = useState<ImageTask | null>(null);
  const [error, setError] = useState<{ message: string; hint?: string } | null>(null);
  const logRef = useRef<HTMLPreElement>(null);
  const running = task?.state === 'running';

  useInterval(
    () => {
      if (!task) return;
      api.call('imageTask', { id: task.id }).then(
        (t) => {
          setTask(t);
          if (t.state !== 'running') onBuilt();
        },
        (err: unknown) => setError(describeError(err)),
      );
    },
    running ? 400 : null,
  );

  // The newest line stays in view while the build writes.
  useEffect(() => {
    const el = logRef.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [task?.events.length]);

  async function start(e: FormEvent) {
    e.preventDefault();
    setError(null);
    try {
      setTask(await api.call('buildImage', { tag: tag.trim(), context: context.trim() }));
    } catch (err) {
      setError(describeError(err));
    }
  }

  async function cancel() {
    if (!task) return;
    try {
      setTask(await api.call('cancelImageTask', { id: task.id }));
    } catch (err) {
      setError(describeError(err));
    }
  }

  const lastStep = task?.events.filter((ev) => ev.kind === 'step').at(-1);
  return (
    <form className="images-build" onSubmit={(e) => void start(e)} data-testid="image-build-form">
      <h3>Build an image</h3>
      <div className="field-row">
        <label className="field">
          <span className="label">Tag</span>
          <input
            data-testid="image-build-tag"
            value={tag}
            onChange={(e) => setTag(e.target.value)}
            placeholder="e.g. my/tool:1"
            spellCheck={false}
            required
            disabled={running}
          />
        </label>
        <label className="field field-grow">
          <span className="label">Folder with a Dockerfile (absolute path on this machine)</span>
          <input
            data-testid="image-build-context"
            value={context}
            onChange={(e) => setContext(e.target.value)}
            placeholder="/home/me/project"
            spellCheck={false}
            required
            disabled={running}
          />
        </label>
      </div>
      <div className="modal-actions">
        {task && (
          <span className="progress" role="status" data-testid="image-build-status">
            {running && <span className="spinner" aria-hidden="true" />}
            {running
              ? lastStep
                ? `Step ${lastStep.step}/${lastStep.total}: ${lastStep.text}`
                : 'Starting…'
              : task.state === 'succeeded'
                ? `Built ${task.target}.`
                : task.state === 'cancelled'
                  ? 'Cancelled; nothing was tagged.'
                  : 'Failed.'}
          </span>
        )}
        {running ? (
          <button type="button" className="btn" data-testid="image-build-cancel" onClick={() => void cancel()}>
            Cancel
          </button>
        ) : (
          <button type="submit" className="btn btn-primary" data-testid="image-build-start">
            Build
          </button>
        )}
      </div>
      {error && (
        <div className="field-error" role="alert" data-testid="image-build-error">
          {error.message}
          {error.hint && <div className="hint">{error.hint}</div>}
        </div>
      )}
      {task?.error && task.state === 'failed' && (
        <div className="field-error" role="alert" data-testid="image-build-error">
          <pre className="build-error">{task.error.message}</pre>
          {task.error.hint && <div className="hint">{task.error.hint}</div>}
        </div>
      )}
      {task && (
        <pre className="build-log" ref={logRef} data-testid="image-build-log">
          {task.events.slice(-LOG_LINES).map((ev, n) => (
            <div key={n} className={`build-${ev.kind}`}>
              {ev.kind === 'step' ? `Step ${ev.step}/${ev.total}: ${ev.text}` : ev.text}
            </div>
          ))}
        </pre>
      )}
    </form>
  );
}
