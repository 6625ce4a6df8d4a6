import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { WebSocket } from 'ws';
import type { ApiClient, ApiMethod, ApiParams, ApiResult, StreamGrant } from '../api/contract.js';
import { SandboxDeskError, type ErrorCode } from '../shared/errors.js';

/**
 * MINIMAL client over the service's socket (or a TCP server with its token): `call`, `request`,
 * `openStream`, `close`. The SDK's full client (branch h-cli-client) replaces this file at merge with
 * the same surface; only that surface is used by src/client/connect.ts and the service's tests.
 */
export interface DeskClient extends ApiClient {
  request(
    path: string,
    init?: { method?: string; headers?: Record<string, string>; body?: Buffer | NodeJS.ReadableStream },
  ): Promise<IncomingMessage>;
  openStream(grant: StreamGrant): WebSocket;
  close(): Promise<void>;
}

export function createHttpClient(target: { socketPath: string } | { origin: string; token: string }): DeskClient {
  // No keep-alive: a connection lives as long as its request, so the service counts real clients.
  const agent = new Agent({ keepAlive: false });
  const base =
    'socketPath' in target
      ? { socketPath: target.socketPath }
      : (() => {
          const u = new URL(target.origin);
          return { host: u.hostname, port: Number(u.port) };
        })();
  const auth: Record<string, string> = 'token' in target ? { Authorization: `Bearer ${target.token}` } : {};

  const request: DeskClient['request'] = (path, init = {}) =>
    new Promise((resolve, reject) => {
      const req = httpRequest(
        { ...base, agent, path, method: init.method ?? 'GET', headers: { Host: 'localhost', ...auth, ...init.headers } },
        resolve,
      );
      req.on('error', reject);
      if (init.body === undefined) req.end();
      else if (Buffer.isBuffer(init.body)) req.end(init.body);
      else init.body.pipe(req);
    });

  return {
    request,
    async call<M extends ApiMethod>(method: M, params: ApiParams<M>): Promise<ApiResult<M>> {
      const res = await request(`/api/call/${method}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: Buffer.from(JSON.stringify(params ?? {})),
      });
      const chunks: Buffer[] = [];
      for await (const c of res) chunks.push(c as Buffer);
      const text = Buffer.concat(chunks).toString('utf8');
      let body: { ok?: unknown; error?: { code: string; message: string; hint?: string; details?: Record<string, unknown> } };
      try {
        body = JSON.parse(text) as typeof body;
      } catch {
        throw new SandboxDeskError('internal', `the service answered ${res.statusCode} with no JSON: ${text.slice(0, 200)}`);
      }
      if (body.error)
        throw new SandboxDeskError(body.error.code as ErrorCode, body.error.message, {
          ...(body.error.hint ? { hint: body.error.hint } : {}),
          ...(body.error.details ? { details: body.error.details } : {}),
        });
      return body.ok as ApiResult<M>;
    },
    openStream(grant: StreamGrant): WebSocket {
      // The grant names the service's own origin; over the socket only its path and ticket matter.
      const u = new URL(grant.url, 'ws://localhost');
      if ('socketPath' in target) return new WebSocket(`ws+unix://${target.socketPath}:${u.pathname}${u.search}`);
      return new WebSocket(`${new URL(target.origin).origin.replace(/^http/, 'ws')}${u.pathname}${u.search}`, { headers: auth });
    },
    async close(): Promise<void> {
      agent.destroy();
    },
  };
}
