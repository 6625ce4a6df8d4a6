import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { applyRequestTimeouts, DEFAULT_REQUEST_TIMEOUTS, pathIs } from './request-timeouts.js';

let servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  servers = [];
});

/** A server that reads each body whole and answers with its length; `/upload` is the streaming route. */
async function serve(requestMs: number): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    let n = 0;
    req.on('data', (c: Buffer) => (n += c.length));
    req.on('end', () => {
      if (!res.headersSent) res.end(String(n));
    });
  });
  servers.push(server);
  applyRequestTimeouts(server, { requestMs, headersMs: 5000 }, (req) => pathIs(req, ['/upload']));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}

/** Sends `chunks` bytes of body one by one, `pauseMs` apart; resolves with the status and body (or the error). */
function slowPost(
  port: number,
  path: string,
  chunks: number,
  pauseMs: number,
): Promise<{ status: number; body: string } | { error: string }> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'PUT', headers: { 'Content-Length': chunks } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', (e) => resolve({ error: e.message }));
    });
    req.on('error', (e) => resolve({ error: e.message }));
    let sent = 0;
    const next = () => {
      if (req.destroyed) return;
      req.write('x');
      if (++sent < chunks) setTimeout(next, pauseMs);
      else req.end();
    };
    next();
  });
}

describe('request timeouts', () => {
  it("turn Node's server-wide whole-request cap off and keep its headers timeout", async () => {
    const { server } = await serve(DEFAULT_REQUEST_TIMEOUTS.requestMs);
    expect(server.requestTimeout).toBe(0);
    expect(server.headersTimeout).toBe(5000);
    expect(DEFAULT_REQUEST_TIMEOUTS).toEqual({ requestMs: 300_000, headersMs: 60_000 });
  });

  it('a body slower than the limit is cut with 408 on an ordinary route, and completes on a streaming one', async () => {
    const { port } = await serve(300);
    const [plain, upload] = await Promise.all([slowPost(port, '/api/call/x', 8, 100), slowPost(port, '/upload?ticket=t', 8, 100)]);
    expect(plain).toMatchObject({ status: 408 });
    expect((plain as { body: string }).body).toMatch(/did not arrive whole within/);
    expect(upload).toEqual({ status: 200, body: '8' });
  });

  it('a request that arrived whole is never cut, however long its answer takes', async () => {
    const server = createServer((_req, res) => setTimeout(() => res.end('late'), 500));
    servers.push(server);
    applyRequestTimeouts(server, { requestMs: 100, headersMs: 5000 }, () => false);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const r = await slowPost((server.address() as AddressInfo).port, '/api/call/x', 1, 0);
    expect(r).toEqual({ status: 200, body: 'late' });
  });

  it('pathIs compares the path without its query', () => {
    const req = (url: string) => ({ url }) as never;
    expect(pathIs(req('/files/upload?ticket=a'), ['/files/upload'])).toBe(true);
    expect(pathIs(req('/files/upload'), ['/files/upload'])).toBe(true);
    expect(pathIs(req('/files/uploadx'), ['/files/upload'])).toBe(false);
    expect(pathIs(req('/api/call/files/upload'), ['/files/upload'])).toBe(false);
  });
});
