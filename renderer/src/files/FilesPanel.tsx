import { useCallback, useEffect, useRef, useState } from 'react';
import type { FileListing } from '../../../src/api/contract.js';
import { describeError } from '../app/api-client.js';
import { useApi } from '../app/api-context.js';
import { FileDropZone } from './FileDropZone.js';
import { downloadFile, formatBytes, uploadFiles } from './file-transfer.js';

interface Props {
  sandbox: string;
  /** The session whose cwd the panel opens at (default session when none). */
  session?: string | undefined;
  visible: boolean;
}

const parentOf = (p: string) => (p === '/' ? '/' : p.slice(0, p.lastIndexOf('/')) || '/');
const join = (dir: string, name: string) => (dir === '/' ? `/${name}` : `${dir}/${name}`);

/**
 * A sandbox's files, anchored at the session's cwd (the same folder its next command starts in):
 * list, open folders, download, upload (button or drop), new folder. Everything goes through the
 * core as the sandbox user, so what the shell cannot enter, the panel cannot list.
 */
export function FilesPanel({ sandbox, session, visible }: Props) {
  const api = useApi();
  /** null: the session's cwd (the core resolves it). */
  const [dir, setDir] = useState<string | null>(null);
  const [listing, setListing] = useState<FileListing | null>(null);
  const [error, setError] = useState<{ message: string; hint?: string } | null>(null);
  const [newFolder, setNewFolder] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const fileInput = useRef<HTMLInputElement>(null);

  useEffect(() => setDir(null), [sandbox, session]);

  const load = useCallback(async () => {
    try {
      const l = await api.call('listFiles', { sandbox, ...(session ? { session } : {}), ...(dir ? { path: dir } : {}) });
      setListing(l);
      setError(null);
    } catch (err) {
      setError(describeError(err));
    }
  }, [api, sandbox, session, dir]);

  useEffect(() => {
    if (visible) void load();
  }, [visible, load]);

  const here = listing?.path ?? dir;
  const act = async (what: string, fn: () => Promise<unknown>) => {
    setBusy(what);
    try {
      await fn();
      setError(null);
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(null);
    }
  };

  const entries = listing
    ? [...listing.entries].sort((a, b) => Number(b.type === 'dir') - Number(a.type === 'dir') || a.name.localeCompare(b.name))
    : [];

  return (
    <section className="card card-wide files-panel" data-testid="files-panel">
      <h3>
        Files
        <span className="muted small">
          {' '}
          {/* Named: with several sessions, "the session" does not say which cwd this is. */}— anchored at session{' '}
          <b data-testid="files-session">{listing?.session ?? session ?? 'default'}</b>’s cwd
          {listing ? (
            <>
              {' '}
              (<code>{listing.cwd}</code>)
            </>
          ) : null}
        </span>
      </h3>
      <div className="files-toolbar">
        <button type="button" className="btn btn-small" disabled={!here || here === '/'} onClick={() => here && setDir(parentOf(here))}>
          ↑ Up
        </button>
        <button
          type="button"
          className="btn btn-small"
          onClick={() => setDir(null)}
          title={`Back to session ${listing?.session ?? session ?? 'default'}'s cwd`}
        >
          cwd
        </button>
        <span className="mono files-path ellipsis" data-testid="files-path" title={here ?? ''}>
          {here ?? '…'}
        </span>
        <button type="button" className="btn btn-small" onClick={() => setNewFolder('')} data-testid="files-new-folder">
          New folder
        </button>
        <button type="button" className="btn btn-small" onClick={() => fileInput.current?.click()} data-testid="files-upload">
          Upload…
        </button>
        <input
          ref={fileInput}
          type="file"
          multiple
          hidden
          data-testid="files-upload-input"
          onChange={(e) => {
            const files = Array.from(e.currentTarget.files ?? []);
            e.currentTarget.value = '';
            if (files.length && here)
              void act(`Uploading ${files.length === 1 ? files[0]!.name : `${files.length} files`}`, async () => {
                await uploadFiles(api, { sandbox, session, dir: here }, files, (p) =>
                  setBusy(`Uploading ${p.name} — ${formatBytes(p.sent)} of ${formatBytes(p.total)}`),
                );
                await load();
              });
          }}
        />
        <button type="button" className="btn btn-small" onClick={() => void load()} aria-label="Refresh">
          ⟳
        </button>
      </div>
      {newFolder !== null && (
        <form
          className="files-new-folder"
          onSubmit={(e) => {
            e.preventDefault();
            const name = newFolder;
            if (!here) return;
            void act('Making folder', async () => {
              await api.call('makeDirectory', { sandbox, ...(session ? { session } : {}), dir: here, name });
              setNewFolder(null);
              await load();
            });
          }}
        >
          <input
            autoFocus
            aria-label="New folder name"
            value={newFolder}
            placeholder="folder name"
            onChange={(e) => setNewFolder(e.target.value)}
            onKeyDown={(e) => e.key === 'Escape' && setNewFolder(null)}
          />
          <button type="submit" className="btn btn-small btn-primary">
            Create
          </button>
          <button type="button" className="btn btn-small" onClick={() => setNewFolder(null)}>
            Cancel
          </button>
        </form>
      )}
      {busy && (
        <div className="progress" role="status">
          <span className="spinner" /> {busy}
        </div>
      )}
      {error && (
        <div className="notice notice-error" role="alert" data-testid="files-error">
          <span>{error.message}</span>
          {error.hint && <span className="small">{error.hint}</span>}
        </div>
      )}
      <FileDropZone sandbox={sandbox} session={session} dir={here ?? undefined} onUploaded={() => void load()} testId="files-drop">
        <table className="files-table">
          <thead>
            <tr>
              <th>Name</th>
              <th className="num">Size</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {listing && entries.length === 0 && (
              <tr>
                <td colSpan={3} className="muted">
                  Empty folder. Drop files here, or Upload….
                </td>
              </tr>
            )}
            {here &&
              entries.map((e) => (
                <tr key={e.name} data-testid="files-row">
                  <td>
                    {e.type === 'dir' ? (
                      <button type="button" className="link" onClick={() => setDir(join(here, e.name))}>
                        {e.name}/
                      </button>
                    ) : (
                      <span className="mono">
                        {e.type === 'link' ? '↪ ' : ''}
                        {e.name}
                      </span>
                    )}
                  </td>
                  <td className="num muted">{e.type === 'file' ? formatBytes(e.size) : ''}</td>
                  <td className="num">
                    {e.type !== 'dir' && (
                      <button
                        type="button"
                        className="btn btn-small"
                        aria-label={`Download ${e.name}`}
                        onClick={() =>
                          void act(`Downloading ${e.name}`, () => downloadFile(api, { sandbox, session, path: join(here, e.name) }))
                        }
                      >
                        Download
                      </button>
                    )}
                  </td>
                </tr>
              ))}
          </tbody>
        </table>
      </FileDropZone>
    </section>
  );
}
