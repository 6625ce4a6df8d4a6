/**
 * One HTTP/1.1 request to the service's Unix socket over `node:net`, its whole answer read into memory:
 * the typed client's contract calls (http-client.ts) and the service probe (connect.ts) use it.
 *
 * Why not `node:http`: loading Node's HTTP client is most of a cold CLI's request. Measured on the
 * project's 2-core CI machine (load ≈ 85, 15 interleaved rounds, one POST to a stand-in service on a
 * Unix socket, p50 over `node -e 0`): `node:http` with `agent: false` +315 ms, `node:http` with the
 * socket passed via `createConnection` +289 ms, this over `node:net` +111 ms. `sandbox-desk exec` makes
 * exactly one such request, so `node:http` is loaded only for the raw routes (file transfer) and streams.
 *
 * It speaks only what the service sends (src/api/local-server.ts: `writeHead` then `end(json)`, which
 * Node sends chunked; Content-Length and read-to-close are handled too), asks the server to close after
 * the answer (`Connection: close`: no keep-alive to manage), and rejects — never hangs — on a refused or
 * missing socket (the connect error itself, so callers can tell "never arrived"), a server that closes
 * before a complete answer, a malformed answer, an idle timeout, or an aborted signal.
 */
import { connect } from 'node:net';

export interface SocketRequest {
  socketPath: string;
  method: string;
  /** Origin-form target, e.g. `/api/call/exec`. */
  path: string;
  headers?: Record<string, string>;
  body?: Buffer;
  /** Idle time (no byte from the server) after which the request fails; none by default (an `exec` may run long). */
  timeoutMs?: number;
  /** Aborting drops the connection (the service then interrupts an `exec`). */
  signal?: AbortSignal;
}

export interface SocketResponse {
  status: number;
  /** Header names in lower case; a repeated header keeps its last value. */
  headers: Record<string, string>;
  body: Buffer;
}

export type SocketRequestFailure = 'closed_early' | 'malformed' | 'timeout' | 'aborted';

/** A fault after the connection was made (a connect error is passed on as it is, with its errno code). */
export class SocketRequestError extends Error {
  constructor(
    readonly failure: SocketRequestFailure,
    message: string,
  ) {
    super(message);
    this.name = 'SocketRequestError';
  }
}

/** Bytes of status line + headers accepted before the answer counts as malformed. */
const MAX_HEAD = 64 * 1024;

/** A header name or value, the method or the path must not smuggle a line break into the request. */
function checkField(what: string, text: string): string {
  if (/[\r\n\0]/.test(text)) throw new TypeError(`socketRequest: the ${what} contains a line break or NUL: ${JSON.stringify(text)}`);
  return text;
}

function head(req: SocketRequest): Buffer {
  const lines = [`${checkField('method', req.method)} ${checkField('path', req.path)} HTTP/1.1`];
  const headers: Record<string, string> = { Host: 'localhost', ...req.headers };
  for (const [k, v] of Object.entries(headers)) {
    const lower = k.toLowerCase();
    // Framing is this module's: one body of a known length, one answer, then close.
    if (lower === 'content-length' || lower === 'connection' || lower === 'transfer-encoding') continue;
    lines.push(`${checkField('header name', k)}: ${checkField(`header ${k}`, v)}`);
  }
  if (req.body !== undefined || req.method !== 'GET') lines.push(`Content-Length: ${req.body?.length ?? 0}`);
  lines.push('Connection: close', '', '');
  return Buffer.from(lines.join('\r\n'), 'latin1');
}

/** Status line and headers of `bytes` (up to the blank line). */
function parseHead(bytes: Buffer): { status: number; headers: Record<string, string> } {
  const lines = bytes.toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(lines[0] ?? '');
  if (!m)
    throw new SocketRequestError(
      'malformed',
      `the answer does not start with an HTTP/1.x status line: ${JSON.stringify(lines[0]?.slice(0, 80))}`,
    );
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0)
      throw new SocketRequestError('malformed', `a header line of the answer has no name: ${JSON.stringify(line.slice(0, 80))}`);
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(m[1]), headers };
}

/**
 * Decodes the complete chunks in `buf` into `parts`. Returns how many bytes it consumed and whether the
 * last chunk (and any trailers) arrived; an incomplete chunk is left for the next read.
 */
export function decodeChunks(buf: Buffer, parts: Buffer[]): { used: number; done: boolean } {
  let i = 0;
  for (;;) {
    const eol = buf.indexOf('\r\n', i);
    if (eol < 0) {
      if (buf.length - i > 1024) throw new SocketRequestError('malformed', 'a chunk size line of the answer is too long');
      return { used: i, done: false };
    }
    const sizeText = buf.toString('latin1', i, eol).split(';')[0]!.trim();
    if (!/^[0-9a-fA-F]{1,12}$/.test(sizeText))
      throw new SocketRequestError('malformed', `a chunk of the answer has no valid size: ${JSON.stringify(sizeText.slice(0, 20))}`);
    const size = parseInt(sizeText, 16);
    if (size === 0) {
      // The last chunk, then optional trailers, then a blank line: "0\r\n\r\n" at the least.
      const end = buf.indexOf('\r\n\r\n', eol);
      return end < 0 ? { used: i, done: false } : { used: end + 4, done: true };
    }
    if (buf.length < eol + 2 + size + 2) return { used: i, done: false };
    if (buf[eol + 2 + size] !== 0x0d || buf[eol + 3 + size] !== 0x0a)
      throw new SocketRequestError('malformed', 'a chunk of the answer is longer than its size says');
    parts.push(buf.subarray(eol + 2, eol + 2 + size));
    i = eol + 4 + size;
  }
}

/** Sends `req` and resolves with the whole answer, whatever its status. */
export function socketRequest(req: SocketRequest): Promise<SocketResponse> {
  return new Promise((resolve, reject) => {
    const request = head(req); // throws (synchronously, into the promise) on a line break in a field
    if (req.signal?.aborted) return reject(new SocketRequestError('aborted', 'the request was aborted before it was sent'));
    const socket = connect(req.socketPath);
    let settled = false;
    const finish = (err: Error | null, res?: SocketResponse): void => {
      if (settled) return;
      settled = true;
      req.signal?.removeEventListener('abort', onAbort);
      socket.destroy();
      if (err) reject(err);
      else resolve(res!);
    };
    const onAbort = (): void => finish(new SocketRequestError('aborted', 'the request was aborted'));
    req.signal?.addEventListener('abort', onAbort, { once: true });

    let pending: Buffer = Buffer.alloc(0);
    let parsed: { status: number; headers: Record<string, string> } | null = null;
    let framing: { kind: 'chunked' } | { kind: 'length'; length: number } | { kind: 'close' } = { kind: 'close' };
    const parts: Buffer[] = [];
    let received = 0;

    const complete = (): void => finish(null, { ...parsed!, body: Buffer.concat(parts) });
    const consume = (): void => {
      if (!parsed) {
        const end = pending.indexOf('\r\n\r\n');
        if (end < 0) {
          if (pending.length > MAX_HEAD) throw new SocketRequestError('malformed', `the answer's headers exceed ${MAX_HEAD} bytes`);
          return;
        }
        parsed = parseHead(pending.subarray(0, end));
        pending = pending.subarray(end + 4);
        const te = parsed.headers['transfer-encoding'];
        const cl = parsed.headers['content-length'];
        if (te !== undefined) {
          if (te.toLowerCase() !== 'chunked')
            throw new SocketRequestError('malformed', `the answer's transfer encoding is not chunked: ${te}`);
          framing = { kind: 'chunked' };
        } else if (cl !== undefined) {
          if (!/^\d{1,15}$/.test(cl)) throw new SocketRequestError('malformed', `the answer's Content-Length is not a number: ${cl}`);
          framing = { kind: 'length', length: Number(cl) };
        } else if (parsed.status === 204 || parsed.status === 304 || req.method === 'HEAD') framing = { kind: 'length', length: 0 };
      }
      if (framing.kind === 'chunked') {
        const { used, done } = decodeChunks(pending, parts);
        pending = pending.subarray(used);
        if (done) complete();
      } else if (framing.kind === 'length') {
        const take = pending.subarray(0, framing.length - received);
        parts.push(take);
        received += take.length;
        pending = Buffer.alloc(0);
        if (received === framing.length) complete();
      } else {
        parts.push(pending);
        pending = Buffer.alloc(0);
      }
    };

    if (req.timeoutMs !== undefined)
      socket.setTimeout(req.timeoutMs, () =>
        finish(new SocketRequestError('timeout', `no answer within ${req.timeoutMs} ms (the service is busy or hung)`)),
      );
    socket.on('connect', () => {
      socket.write(req.body ? Buffer.concat([request, req.body]) : request);
    });
    socket.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      try {
        consume();
      } catch (err) {
        finish(err as Error);
      }
    });
    socket.on('end', () => {
      if (parsed && framing.kind === 'close') return complete();
      finish(
        new SocketRequestError(
          'closed_early',
          parsed
            ? 'the connection closed before the answer was complete'
            : `the connection closed before an answer${pending.length ? `: ${JSON.stringify(pending.toString('latin1', 0, 200).trim())}` : ''}`,
        ),
      );
    });
    // A connect error (ENOENT, ECONNREFUSED) or a reset: passed on as Node gives it, with its errno code.
    socket.on('error', (err) => finish(err));
    socket.on('close', () => finish(new SocketRequestError('closed_early', 'the connection closed before the answer was complete')));
  });
}
