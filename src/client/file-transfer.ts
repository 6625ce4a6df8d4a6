/**
 * File transfers (`cp`, the SDK's files) over the server's file routes (FILE_PATHS in the contract), through the client:
 * the sandbox side is asked for a ticket, the bytes go over `request`. What lands where on this
 * machine stays cp-download.ts's to decide, from the person's arguments only.
 */
import { createReadStream } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { DOWNLOAD_RESULT } from '../api/contract.js';
import { errorFrom, readJsonAnswer, type DeskClient } from './http-client.js';
import { SandboxDeskError } from '../shared/errors.js';

/** A download as cp-download.ts receives it: the announced size, the bytes, and how it ended. */
export interface HttpDownload {
  path: string;
  name: string;
  size: number;
  output: Readable;
  /** Settles once the server said the transfer ended well (its trailer), or fails with its error. */
  done: Promise<void>;
  abort(): void;
}

/** The path and query of a grant's URL: transfers always go to the server this client talks to. */
function routeOf(url: string): string {
  const u = new URL(url, 'http://localhost');
  return u.pathname + u.search;
}

export async function startHttpDownload(
  client: DeskClient,
  input: { sandbox: string; path: string; session?: string },
): Promise<HttpDownload> {
  const grant = await client.call('fileDownloadTicket', input);
  const res = await client.request(`${routeOf(grant.url)}&${DOWNLOAD_RESULT.query}`);
  if (res.statusCode !== 200) await readJsonAnswer(res, `the download of ${grant.path}`);
  const size = Number(res.headers[DOWNLOAD_RESULT.sizeHeader]);
  if (!Number.isSafeInteger(size) || size < 0) {
    res.destroy();
    throw new SandboxDeskError('service_unavailable', `the download of ${grant.path} came without its size`, {
      hint: 'the service may be of another version: run the command again',
    });
  }
  const done = ended(res, grant.path);
  // Awaited by the receiver; a transfer given up before that must not be an unhandled rejection.
  done.catch(() => undefined);
  return { path: grant.path, name: grant.name, size, output: res, done, abort: () => res.destroy() };
}

/** How the server said the download ended: its trailer once the body is complete. */
function ended(res: IncomingMessage, path: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    res.once('end', () => {
      const result = res.trailers[DOWNLOAD_RESULT.trailer];
      if (result === 'ok') return resolve();
      let parsed: unknown = null;
      try {
        parsed = result === undefined ? null : JSON.parse(result);
      } catch {
        // Not JSON: said below as a cut transfer.
      }
      reject(
        errorFrom({ error: parsed }) ??
          new SandboxDeskError('service_unavailable', `the download of ${path} ended without saying it was complete`, {
            hint: 'copy it again',
          }),
      );
    });
    res.once('error', reject);
    res.once('close', () =>
      reject(new SandboxDeskError('service_unavailable', `the download of ${path} was cut off`, { hint: 'copy it again' })),
    );
  });
}

/** Uploads a local file into a folder of the sandbox; resolves with where it landed once complete. */
export async function httpUpload(
  client: DeskClient,
  input: { sandbox: string; dir?: string; name: string; size: number; session?: string },
  /** A local file's path, or the bytes as a stream of exactly `input.size` bytes. */
  local: string | NodeJS.ReadableStream,
): Promise<{ path: string; bytes: number }> {
  const grant = await client.call('fileUploadTicket', input);
  const res = await client.request(routeOf(grant.url), {
    method: 'PUT',
    headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': String(input.size) },
    body: typeof local === 'string' ? createReadStream(local) : local,
  });
  const done = await readJsonAnswer<{ path: string; bytes: number }>(
    res,
    `the upload of ${typeof local === 'string' ? local : input.name}`,
  );
  return { path: done.path, bytes: done.bytes };
}
