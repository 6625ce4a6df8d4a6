/**
 * The typed client of Sandbox Desk over HTTP: the contract's methods (POST /api/call/:method), the
 * ticketed WebSocket streams and the file-transfer routes, over a Unix socket (the per-user service) or
 * loopback TCP with a Bearer token (the browser mode's server). The CLI and the SDK use nothing else.
 *
 * It imports only src/shared/ and the contract (test/architecture/layer-map.ts: layer `client`), so a
 * program that talks to the service never loads the core. A call to the service's socket goes over
 * socket-request.ts (`node:net`); Node's HTTP client is loaded only for the raw routes and a TCP server,
 * since loading it costs a one-call CLI (`sandbox-desk exec`) more than the call itself.
 */
import type { Agent, IncomingMessage, RequestOptions } from 'node:http';
import type { Readable } from 'node:stream';
import { createRequire } from 'node:module';
import type WebSocket from 'ws';
import type { ApiClient, ApiMethod, ApiParams, ApiResult, StreamGrant } from '../api/contract.js';
import { SandboxDeskError, type ErrorCode } from '../shared/errors.js';
import { CLIENT_VERSION_HEADER } from '../shared/service-info.js';
import { socketRequest, SocketRequestError } from './socket-request.js';

/** Per call: `signal` drops the call's connection when aborted (the server then interrupts an `exec`). */
export interface CallOptions {
  signal?: AbortSignal;
}

export interface DeskClient extends ApiClient {
  call<M extends ApiMethod>(method: M, params: ApiParams<M>, opts?: CallOptions): Promise<ApiResult<M>>;
  /** A raw HTTP request to the server (the file-transfer routes): the response, whatever its status. */
  request(
    path: string,
    init?: { method?: string; headers?: Record<string, string>; body?: Buffer | NodeJS.ReadableStream; signal?: AbortSignal },
  ): Promise<IncomingMessage>;
  /** Opens one of the server's streams from the grant a `*Ticket` call gave (grant.url is a path or a full URL). */
  openStream(grant: StreamGrant): WebSocket;
  /** Ends the kept-alive connections; the client is unusable afterwards. */
  close(): Promise<void>;
}

export type ClientTarget =
  /** `expects`: the `<version>/<protocol>` tag sent on each request (the service refuses another: version_mismatch). */
  { socketPath: string; expects?: string } | { origin: string; token: string };

/** Where to reach the server, said in errors: the socket's path or the origin. */
function describe(target: ClientTarget): string {
  return 'socketPath' in target ? `the Sandbox Desk service at ${target.socketPath}` : `the Sandbox Desk server at ${target.origin}`;
}

const RESTART_HINT = 'run the command again; if it keeps failing, see `sandbox-desk service --help` and the log';

/** A transport fault (no server, connection dropped, an answer that is not ours) as the CLI prints it. */
function unavailable(target: ClientTarget, what: string, cause?: unknown): SandboxDeskError {
  return new SandboxDeskError('service_unavailable', `${describe(target)} ${what}`, { hint: RESTART_HINT, cause });
}

/** The server's `{error}` body, as the SandboxDeskError the core threw (same code, message, hint). */
export function errorFrom(body: unknown): SandboxDeskError | null {
  if (!body || typeof body !== 'object' || !('error' in body)) return null;
  const e = body.error;
  if (!e || typeof e !== 'object') return null;
  const { code, message, hint, details } = e as Record<string, unknown>;
  if (typeof code !== 'string' || typeof message !== 'string') return null;
  return new SandboxDeskError(code as ErrorCode, message, {
    ...(typeof hint === 'string' ? { hint } : {}),
    ...(details && typeof details === 'object' ? { details: details as Record<string, unknown> } : {}),
  });
}

/** The error a call ends with when its caller aborted it (null: not aborted). */
function abortedBy(signal: AbortSignal | undefined): SandboxDeskError | null {
  return signal?.aborted ? new SandboxDeskError('cancelled', 'the call was cancelled before it answered') : null;
}

async function readAll(res: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of res) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/**
 * A raw route's JSON answer (`request`, e.g. an upload): its `ok` value, or the server's error thrown as
 * a SandboxDeskError; anything else is a transport fault.
 */
export async function readJsonAnswer<T>(res: IncomingMessage, what: string): Promise<T> {
  const text = (await readAll(res)).toString('utf8');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new SandboxDeskError('service_unavailable', `${what}: the answer is not Sandbox Desk's JSON (HTTP ${res.statusCode})`, {
      hint: RESTART_HINT,
    });
  }
  const error = errorFrom(body);
  if (error) throw error;
  if (body && typeof body === 'object' && 'ok' in body) return (body as { ok: T }).ok;
  throw new SandboxDeskError('service_unavailable', `${what}: the answer is not Sandbox Desk's JSON (HTTP ${res.statusCode})`, {
    hint: RESTART_HINT,
  });
}

export function createHttpClient(target: ClientTarget): DeskClient {
  // keep-alive: a CLI command that makes several raw requests (or calls to a TCP server) pays one connect.
  let agent: Agent | null = null;
  const local = 'socketPath' in target;
  // The loopback server checks Host against its own address (DNS-rebinding guard); a socket has none.
  const host = local ? 'localhost' : new URL(target.origin).host;
  const auth: Record<string, string> = local
    ? target.expects
      ? { [CLIENT_VERSION_HEADER]: target.expects }
      : {}
    : { Authorization: `Bearer ${target.token}` };
  let closed = false;

  function options(agent: Agent, path: string, method: string, headers: Record<string, string>): RequestOptions {
    const base: RequestOptions = { agent, path, method, headers: { Host: host, ...auth, ...headers } };
    if (local) return { ...base, socketPath: target.socketPath };
    const u = new URL(target.origin);
    return { ...base, hostname: u.hostname, port: u.port };
  }

  const request: DeskClient['request'] = async (path, init = {}) => {
    if (closed) throw unavailable(target, 'client is closed');
    const http = await import('node:http');
    agent ??= new http.Agent({ keepAlive: true });
    const a = agent;
    return new Promise<IncomingMessage>((resolve, reject) => {
      const req = http.request(options(a, path, init.method ?? 'GET', init.headers ?? {}), (res) => {
        // A connection that drops while the body streams: the reader sees an error, never a silent end.
        res.on('aborted', () =>
          res.destroy(abortedBy(init.signal) ?? unavailable(target, 'closed the connection before the answer was complete')),
        );
        resolve(res);
      });
      const signal = init.signal;
      if (signal) {
        const onAbort = (): void => void req.destroy(abortedBy(signal)!);
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
        req.on('close', () => signal.removeEventListener('abort', onAbort));
      }
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (err instanceof SandboxDeskError) return reject(err);
        const what =
          err.code === 'ENOENT' || err.code === 'ECONNREFUSED'
            ? `is not running (${err.code})`
            : `closed the connection before answering (${err.code ?? err.message})`;
        reject(unavailable(target, what, err));
      });
      const body = init.body;
      if (body === undefined) req.end();
      else if (Buffer.isBuffer(body)) req.end(body);
      else {
        (body as Readable).on('error', (err) => req.destroy(err));
        (body as Readable).pipe(req);
      }
    });
  };

  /** A call's status and body: over `node:net` to the socket (socket-request.ts), over `node:http` to a TCP server. */
  async function post(method: string, payload: Buffer, signal: AbortSignal | undefined): Promise<{ status: number; text: string }> {
    const path = `/api/call/${method}`;
    if (!local) {
      const res = await request(path, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Content-Length': String(payload.length) },
        body: payload,
        ...(signal ? { signal } : {}),
      });
      try {
        return { status: res.statusCode ?? 0, text: (await readAll(res)).toString('utf8') };
      } catch (err) {
        throw err instanceof SandboxDeskError ? err : unavailable(target, `dropped the answer to ${method}`, err);
      }
    }
    if (closed) throw unavailable(target, 'client is closed');
    try {
      const res = await socketRequest({
        socketPath: target.socketPath,
        method: 'POST',
        path,
        headers: { Host: host, ...auth, 'Content-Type': 'application/json' },
        body: payload,
        ...(signal ? { signal } : {}),
      });
      return { status: res.status, text: res.body.toString('utf8') };
    } catch (err) {
      if (err instanceof SocketRequestError) {
        if (err.failure === 'aborted') throw abortedBy(signal) ?? unavailable(target, `dropped the answer to ${method}`, err);
        if (err.failure === 'malformed')
          throw unavailable(target, `answered ${method} with something that is not HTTP (${err.message})`, err);
        throw unavailable(target, `closed the connection before answering ${method} (${err.message})`, err);
      }
      const code = (err as NodeJS.ErrnoException).code;
      const what =
        code === 'ENOENT' || code === 'ECONNREFUSED'
          ? `is not running (${code})`
          : `closed the connection before answering (${code ?? (err as Error).message})`;
      throw unavailable(target, what, err);
    }
  }

  async function call<M extends ApiMethod>(method: M, params: ApiParams<M>, opts: CallOptions = {}): Promise<ApiResult<M>> {
    const payload = Buffer.from(JSON.stringify(params ?? {}));
    const { status, text } = await post(method, payload, opts.signal);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw unavailable(target, `answered ${method} with something that is not Sandbox Desk's JSON (HTTP ${status})`);
    }
    const error = errorFrom(body);
    if (error) throw error;
    if (body && typeof body === 'object' && 'ok' in body) return (body as { ok: ApiResult<M> }).ok;
    throw unavailable(target, `answered ${method} with something that is not Sandbox Desk's JSON (HTTP ${status})`);
  }

  function openStream(grant: StreamGrant): WebSocket {
    // Loaded on the first stream: a plain call (`exec`) never pays for the WebSocket library.
    const WebSocketClass = createRequire(import.meta.url)('ws') as typeof WebSocket;
    // A grant's url may be a full ws:// URL (the loopback server makes them) or a path: only its path is
    // used, so a stream always goes to the server this client talks to.
    const u = new URL(grant.url, 'ws://localhost');
    const path = u.pathname + u.search;
    if (local) return new WebSocketClass(`ws+unix://${target.socketPath}:${path}`, { headers: { Host: host } });
    const origin = new URL(target.origin);
    return new WebSocketClass(`ws://${origin.host}${path}`);
  }

  return {
    call,
    request,
    openStream,
    async close() {
      closed = true;
      agent?.destroy();
    },
  };
}
