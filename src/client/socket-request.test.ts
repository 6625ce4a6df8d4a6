import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer } from 'node:http';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeChunks, socketRequest, SocketRequestError } from './socket-request.js';

const dir = mkdtempSync(join(tmpdir(), 'sdesk-sockreq-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A real node:http server answering as src/api/local-server.ts does: writeHead, then end(json) — sent chunked. */
describe('socketRequest against a real node:http server on a Unix socket', () => {
  const socketPath = join(dir, 'http.sock');
  let server: HttpServer;
  const seen: { method?: string; url?: string; headers: IncomingMessage['headers']; body: string }[] = [];
  beforeAll(async () => {
    server = createHttpServer((req, res) => {
      let body = '';
      req.setEncoding('utf8').on('data', (d: string) => (body += d));
      req.on('end', () => {
        seen.push({ method: req.method, url: req.url, headers: req.headers, body });
        if (req.url === '/length') {
          res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '11' });
          return void res.end('{"ok":true}');
        }
        if (req.url === '/big') {
          // Many chunks, one of them large: the decoder must join them in order.
          res.writeHead(200, { 'Content-Type': 'application/json' });
          for (let i = 0; i < 50; i++) res.write(`${'x'.repeat(i * 1000)}|`);
          return void res.end();
        }
        res.writeHead(req.url === '/refuse' ? 409 : 200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
        res.end(JSON.stringify({ ok: { echo: body, héllo: 'wörld ✓' } }));
      });
    });
    await new Promise<void>((r) => server.listen(socketPath, r));
  });
  afterAll(() => new Promise((r) => server.close(r)));

  it("sends method, path, headers and body; reads the service's chunked JSON answer", async () => {
    seen.length = 0;
    const res = await socketRequest({
      socketPath,
      method: 'POST',
      path: '/api/call/exec',
      headers: { 'Content-Type': 'application/json', 'X-Sandbox-Desk-Client': '1.2.3/4' },
      body: Buffer.from('{"sandbox":"box"}'),
    });
    expect(res.status).toBe(200);
    expect(res.headers['transfer-encoding']).toBe('chunked');
    expect(JSON.parse(res.body.toString('utf8'))).toEqual({ ok: { echo: '{"sandbox":"box"}', héllo: 'wörld ✓' } });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/api/call/exec', body: '{"sandbox":"box"}' });
    expect(seen[0]!.headers).toMatchObject({
      host: 'localhost',
      'content-length': '17',
      connection: 'close',
      'x-sandbox-desk-client': '1.2.3/4',
    });
  });

  it('reads a Content-Length answer, a many-chunk answer, and gives any status back as it is', async () => {
    expect((await socketRequest({ socketPath, method: 'GET', path: '/length' })).body.toString()).toBe('{"ok":true}');
    const big = await socketRequest({ socketPath, method: 'GET', path: '/big' });
    expect(big.body.toString()).toBe(Array.from({ length: 50 }, (_, i) => `${'x'.repeat(i * 1000)}|`).join(''));
    const refused = await socketRequest({ socketPath, method: 'POST', path: '/refuse', body: Buffer.from('{}') });
    expect(refused.status).toBe(409);
  });

  it('a line break in the path or a header is refused before anything is sent', async () => {
    seen.length = 0;
    await expect(socketRequest({ socketPath, method: 'GET', path: '/x HTTP/1.1\r\nEvil: 1' })).rejects.toThrow(/line break/);
    await expect(socketRequest({ socketPath, method: 'GET', path: '/x', headers: { A: 'b\r\nEvil: 1' } })).rejects.toThrow(/line break/);
    expect(seen).toEqual([]);
  });

  it('no socket there: the connect error itself (ENOENT), so a caller can tell the request never arrived', async () => {
    const err = (await socketRequest({ socketPath: join(dir, 'none.sock'), method: 'GET', path: '/' }).catch(
      (e: unknown) => e,
    )) as NodeJS.ErrnoException;
    expect(err).not.toBeInstanceOf(SocketRequestError);
    expect(err.code).toBe('ENOENT');
  });
});

/** A raw server that answers with exactly the bytes each test scripts: early closes, hangs, garbage. */
describe('socketRequest against a server that misbehaves', () => {
  const socketPath = join(dir, 'raw.sock');
  let server: NetServer;
  let onConnection: (s: Socket) => void = () => undefined;
  beforeAll(async () => {
    server = createNetServer((s) => {
      s.on('error', () => undefined);
      // Read (and drop) the request: a paused socket would never see the client's close.
      s.resume();
      onConnection(s);
    });
    await new Promise<void>((r) => server.listen(socketPath, r));
  });
  afterAll(() => new Promise((r) => server.close(r)));
  const get = (extra: Partial<Parameters<typeof socketRequest>[0]> = {}) =>
    socketRequest({ socketPath, method: 'GET', path: '/', ...extra });
  const failure = async (p: Promise<unknown>) => {
    const err = await p.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SocketRequestError);
    return err as SocketRequestError;
  };

  it('answer bytes split at every boundary still make one answer', async () => {
    const answer = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\n';
    onConnection = (s) => {
      let i = 0;
      const drip = (): void => {
        if (i >= answer.length) return;
        s.write(answer.slice(i, i + 3));
        i += 3;
        setImmediate(drip);
      };
      drip();
    };
    const res = await get();
    expect(res.body.toString()).toBe('hello world');
  });

  it('a service that closes before answering (a refusal line) says so, with the line', async () => {
    onConnection = (s) => s.end('sandbox-desk: refused: the connecting process runs as uid 65534\n');
    const err = await failure(get());
    expect(err.failure).toBe('closed_early');
    expect(err.message).toMatch(/closed before an answer: "sandbox-desk: refused: the connecting process runs as uid 65534"/);
  });

  it('a service that closes in the middle of the body: closed_early, never a truncated body', async () => {
    onConnection = (s) => s.end('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{"ok":');
    expect((await failure(get())).failure).toBe('closed_early');
    onConnection = (s) => s.end('HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n{"ok":');
    expect((await failure(get())).failure).toBe('closed_early');
  });

  it('an answer without length is read to the close', async () => {
    onConnection = (s) => s.end('HTTP/1.0 200 OK\r\n\r\n{"ok":1}');
    expect((await get()).body.toString()).toBe('{"ok":1}');
  });

  it('garbage, a bad chunk size, an unknown transfer encoding, an oversized head: malformed', async () => {
    for (const bytes of [
      'SSH-2.0-OpenSSH\r\n\r\n',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n',
      'HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n',
      `HTTP/1.1 200 OK\r\nX: ${'a'.repeat(70_000)}`,
    ]) {
      onConnection = (s) => s.write(bytes);
      expect((await failure(get())).failure, bytes.slice(0, 40)).toBe('malformed');
    }
  });

  it('a service that never answers: timeout after timeoutMs, and the connection is dropped', async () => {
    let closed = false;
    onConnection = (s) => s.on('close', () => (closed = true));
    const t0 = Date.now();
    const err = await failure(get({ timeoutMs: 150 }));
    expect(err.failure).toBe('timeout');
    expect(err.message).toMatch(/no answer within 150 ms/);
    expect(Date.now() - t0).toBeLessThan(5000);
    await expect.poll(() => closed).toBe(true);
  });

  it('an aborted signal drops the connection (the service interrupts an exec on that)', async () => {
    const abort = new AbortController();
    let closed = false;
    onConnection = (s) => {
      s.on('close', () => (closed = true));
      abort.abort();
    };
    expect((await failure(get({ signal: abort.signal }))).failure).toBe('aborted');
    await expect.poll(() => closed).toBe(true);
    // Already aborted: nothing is sent at all.
    expect((await failure(get({ signal: abort.signal }))).failure).toBe('aborted');
  });
});

describe('decodeChunks', () => {
  it('leaves an incomplete chunk for the next read and consumes only whole chunks', () => {
    const parts: Buffer[] = [];
    expect(decodeChunks(Buffer.from('3\r\nab'), parts)).toEqual({ used: 0, done: false });
    expect(decodeChunks(Buffer.from('3\r\nabc\r\n1\r'), parts)).toEqual({ used: 8, done: false });
    expect(Buffer.concat(parts).toString()).toBe('abc');
    expect(decodeChunks(Buffer.from('0\r\n\r\n'), parts)).toEqual({ used: 5, done: true });
  });
});
