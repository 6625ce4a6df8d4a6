import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { asSandboxDeskError, SandboxDeskError } from '../shared/errors.js';
import { DOWNLOAD_RESULT, FILE_PATHS, type FileTransferGrant } from './contract.js';
import { statusFor } from './http-status.js';
import type { RequestTarget } from './request-target.js';
import type { SandboxDesk } from './sandbox-desk.js';
import { TicketBook } from './tickets.js';

export interface UploadGrant {
  sandbox: string;
  session?: string | undefined;
  dir?: string | undefined;
  name: string;
  size: number;
}

export interface DownloadGrant {
  sandbox: string;
  session?: string | undefined;
  path: string;
}

export interface FileTransferRoutesOptions {
  desk: Pick<SandboxDesk, 'io' | 'events'>;
  ticketTtlMs: number;
  origin: () => string;
  originAllowed: (origin: string | undefined) => boolean;
}

/**
 * The file panel's two HTTP endpoints on the local server: `PUT /files/upload?ticket=` streams a
 * request body into the sandbox, `GET /files/download?ticket=` streams a file out. Like every stream,
 * each needs a single-use ticket (from `fileUploadTicket` / `fileDownloadTicket`, which did the checks
 * a person wants to hear about before any byte moves), and the bytes are piped, never buffered whole:
 * a 4 GiB file costs the core the same memory as a 4 KiB one. The ticket is the credential, so these
 * work from the Electron window too, which has no cookie for this origin (CORS allows our origins).
 */
export class FileTransferRoutes {
  private readonly uploads: TicketBook<UploadGrant>;
  private readonly downloads: TicketBook<DownloadGrant>;

  constructor(private readonly opts: FileTransferRoutesOptions) {
    this.uploads = new TicketBook(opts.ticketTtlMs);
    this.downloads = new TicketBook(opts.ticketTtlMs);
  }

  uploadTicket(grant: UploadGrant): FileTransferGrant {
    const ticket = this.uploads.issue(grant);
    return { ticket, url: `${this.opts.origin()}${FILE_PATHS.upload}?ticket=${ticket}` };
  }

  downloadTicket(grant: DownloadGrant): FileTransferGrant {
    const ticket = this.downloads.issue(grant);
    return { ticket, url: `${this.opts.origin()}${FILE_PATHS.download}?ticket=${ticket}` };
  }

  /** Serves the request when it is one of ours (true), else leaves it to the caller (false). */
  async handle(req: IncomingMessage, res: ServerResponse, url: RequestTarget): Promise<boolean> {
    const upload = url.pathname === FILE_PATHS.upload;
    if (!upload && url.pathname !== FILE_PATHS.download) return false;
    const origin = req.headers.origin;
    if (!this.opts.originAllowed(origin)) {
      send(res, 403, { error: { code: 'refused', message: 'cross-origin request refused' } });
      return true;
    }
    if (origin !== undefined) res.setHeader('Access-Control-Allow-Origin', origin);
    if (req.method === 'OPTIONS') {
      res.writeHead(204, {
        'Access-Control-Allow-Methods': 'PUT, GET',
        'Access-Control-Allow-Headers': 'Content-Type',
        'Access-Control-Max-Age': '600',
      });
      res.end();
      return true;
    }
    try {
      if (upload && (req.method === 'PUT' || req.method === 'POST')) await this.upload(req, res, url);
      else if (!upload && req.method === 'GET') await this.download(res, url);
      else send(res, 405, { error: { code: 'invalid_input', message: `${req.method} is not served at ${url.pathname}` } });
    } catch (err) {
      const e = asSandboxDeskError(err);
      if (!res.headersSent) send(res, statusFor(e.code), { error: e.toJSON() });
      else res.destroy();
      // Whatever of the body is still coming is not read: close rather than drain a large upload.
      if (!req.complete) req.destroy();
    }
    return true;
  }

  private redeem<G>(book: TicketBook<G>, url: RequestTarget): G {
    const r = book.redeem(url.query.get('ticket'));
    if (!r.ok)
      throw new SandboxDeskError('refused', `file transfer refused: ${r.reason}`, {
        hint: 'ask for a new ticket (fileUploadTicket / fileDownloadTicket); each one works once, for 30 s',
      });
    return r.grant;
  }

  private async upload(req: IncomingMessage, res: ServerResponse, url: RequestTarget): Promise<void> {
    const grant = this.redeem(this.uploads, url);
    const length = req.headers['content-length'];
    if (length === undefined)
      throw new SandboxDeskError('invalid_input', 'an upload needs a Content-Length', {
        hint: 'send the file as one body of known length',
      });
    if (Number(length) !== grant.size)
      throw new SandboxDeskError('invalid_input', `the body has ${length} bytes, the ticket is for ${grant.size}`, {
        hint: 'ask for a ticket with the file’s real size',
      });
    const sink = await this.opts.desk.io.startUpload(grant);
    // A client that goes away mid-body ends the script's input early: it removes the partial file.
    req.on('aborted', () => sink.abort());
    res.on('close', () => {
      if (!req.complete) sink.abort();
    });
    await pipeline(req, sink.input).catch(() => sink.abort());
    const done = await sink.done;
    this.opts.desk.events.publish({ topic: 'files', sandbox: grant.sandbox, path: done.path, reason: 'uploaded' });
    send(res, 200, { ok: { path: done.path, bytes: done.bytes, name: grant.name } });
  }

  private async download(res: ServerResponse, url: RequestTarget): Promise<void> {
    const grant = this.redeem(this.downloads, url);
    const src = await this.opts.desk.io.startDownload(grant);
    // A program's download (the CLI's cp): its result comes in a trailer (DOWNLOAD_RESULT in the contract).
    if (url.query.get('result') === 'trailer') return this.downloadWithResult(res, src);
    res.writeHead(200, {
      'Content-Type': 'application/octet-stream',
      'Content-Length': String(src.size),
      'Content-Disposition': contentDisposition(src.name),
      'Cache-Control': 'no-store',
    });
    res.on('close', () => {
      if (!res.writableFinished) src.abort();
    });
    await pipeline(src.output, res).catch(() => src.abort());
    await src.done.catch(() => res.destroy());
  }

  private async downloadWithResult(res: ServerResponse, src: Awaited<ReturnType<SandboxDesk['io']['startDownload']>>): Promise<void> {
    res.writeHead(200, {
      'Content-Type': 'application/octet-stream',
      [DOWNLOAD_RESULT.sizeHeader]: String(src.size),
      'Cache-Control': 'no-store',
      Trailer: DOWNLOAD_RESULT.trailer,
    });
    res.on('close', () => {
      if (!res.writableFinished) src.abort();
    });
    let failure: unknown = null;
    try {
      // Not pipeline(): the response must stay open for the trailer whatever happened to the source.
      for await (const chunk of src.output) if (!res.write(chunk)) await new Promise((r) => (res.once('drain', r), res.once('close', r)));
      await src.done;
    } catch (err) {
      failure = err;
      src.abort();
    }
    if (res.destroyed) return;
    res.addTrailers({ [DOWNLOAD_RESULT.trailer]: failure === null ? 'ok' : JSON.stringify(asSandboxDeskError(failure).toJSON()) });
    res.end();
  }
}

/** `attachment` with an ASCII fallback and the UTF-8 name (RFC 6266), so any name survives. */
export function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
  res.end(JSON.stringify(body));
}
