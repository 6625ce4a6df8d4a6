import type { ApiClient } from '../../../src/api/contract.js';
import { fileNameProblem } from '../../../src/shared/file-names.js';
import { ApiError } from '../app/api-client.js';

export interface UploadTarget {
  sandbox: string;
  /** The session whose cwd anchors the folder (default: the default session). */
  session?: string | undefined;
  /** Absolute, or relative to the session's cwd; default the cwd itself. */
  dir?: string | undefined;
}

export interface UploadProgress {
  name: string;
  sent: number;
  total: number;
}

/**
 * Uploads one file: the core checks it first (`fileUploadTicket`: folder, name, free space), then the
 * bytes go to the single-use URL with XMLHttpRequest — the browser streams a File from disk and
 * reports upload progress, which fetch() cannot. Resolves with the path the sandbox measured.
 */
export async function uploadFile(
  api: ApiClient,
  target: UploadTarget,
  file: File,
  onProgress?: (p: UploadProgress) => void,
): Promise<{ path: string; bytes: number }> {
  const problem = fileNameProblem(file.name);
  if (problem) throw new ApiError('invalid_input', `cannot upload ${JSON.stringify(file.name)}: ${problem}`);
  const grant = await api.call('fileUploadTicket', {
    sandbox: target.sandbox,
    ...(target.session ? { session: target.session } : {}),
    ...(target.dir ? { dir: target.dir } : {}),
    name: file.name,
    size: file.size,
  });
  onProgress?.({ name: file.name, sent: 0, total: file.size });
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', grant.url);
    xhr.upload.onprogress = (e) => onProgress?.({ name: file.name, sent: e.loaded, total: file.size });
    xhr.onerror = () =>
      reject(new ApiError('unreachable', `the upload of ${file.name} was cut off`, 'nothing was kept under its name; try again'));
    xhr.onload = () => {
      let body: { ok?: { path: string; bytes: number }; error?: { code: string; message: string; hint?: string } } = {};
      try {
        body = JSON.parse(xhr.responseText) as typeof body;
      } catch {
        // handled below
      }
      if (body.ok) return resolve(body.ok);
      const e = body.error;
      reject(new ApiError(e?.code ?? 'internal', e?.message ?? `the upload of ${file.name} failed (HTTP ${xhr.status})`, e?.hint));
    };
    xhr.send(file);
  });
}

/** Uploads several files one after the other (a drop of many), stopping at the first failure. */
export async function uploadFiles(
  api: ApiClient,
  target: UploadTarget,
  files: File[],
  onProgress?: (p: UploadProgress & { index: number; count: number }) => void,
): Promise<Array<{ name: string; path: string }>> {
  const done: Array<{ name: string; path: string }> = [];
  for (const [index, file] of files.entries()) {
    const r = await uploadFile(api, target, file, (p) => onProgress?.({ ...p, index, count: files.length }));
    done.push({ name: file.name, path: r.path });
  }
  return done;
}

/**
 * Downloads a file of the sandbox: the core checks it (`fileDownloadTicket`), then the browser's own
 * download takes the single-use URL — it streams to disk and shows its own progress.
 */
export async function downloadFile(api: ApiClient, target: { sandbox: string; session?: string | undefined; path: string }): Promise<void> {
  const grant = await api.call('fileDownloadTicket', {
    sandbox: target.sandbox,
    ...(target.session ? { session: target.session } : {}),
    path: target.path,
  });
  const a = document.createElement('a');
  a.href = grant.url;
  a.download = grant.name;
  a.rel = 'noopener';
  document.body.append(a);
  a.click();
  a.remove();
}

/** "3.4 MiB": sizes as a person reads them. */
export { byteSize as formatBytes } from '../../../src/shared/byte-size.js';
