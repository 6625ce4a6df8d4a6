import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { SandboxDeskError } from '../shared/errors.js';
import { createHttpClient, type DeskClient } from './http-client.js';

/**
 * The client against a stand-in for the server's HTTP boundary (the real LocalServer round trip is in
 * src/cli/cli-client.test.ts): what it sends, how it maps the server's errors, and what a dropped
 * connection becomes. One server answers on loopback TCP and on a Unix socket.
 */
const dir = mkdtempSync(join(tmpdir(), 'sdesk-httpclient-'));
const socketPath = join(dir, 'desk.sock');
const seen: Array<{ url: string; headers: IncomingMessage['headers']; body: string }> = [];

function handler(req: IncomingMessage, res: ServerResponse): void {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    seen.push({ url: req.url ?? '', headers: req.headers, body });
    const send = (status: number, v: unknown) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(v));
    };
    switch (req.url) {
      case '/api/call/listSandboxes':
        return send(200, { ok: [{ name: 'a' }] });
      case '/api/call/inspectSandbox':
        return send(404, { error: { code: 'not_found', message: 'no sandbox named "zz"', hint: 'see `sandbox-desk sandbox list`' } });
      case '/api/call/exec':
        // The service dies while the command runs: the connection drops with no answer.
        return req.socket.destroy();
      case '/api/call/stopSandbox':
        // The answer's headers arrive, then the connection drops mid-body.
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '1000' });
        res.write('{"ok":');
        return void setTimeout(() => req.socket.destroy(), 20);
      case '/api/call/engineInfo':
        res.writeHead(502, { 'Content-Type': 'text/html' });
        return res.end('<h1>Bad gateway</h1>');
      case '/files/download?ticket=t1':
        res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
        return res.end(Buffer.from([0, 1, 2, 255]));
      default:
        return send(404, { error: { code: 'not_found', message: `no route ${req.url}` } });
    }
  });
}

let tcp: Server;
let unix: Server;
let origin: string;
beforeAll(async () => {
  tcp = createServer(handler);
  unix = createServer(handler);
  const wss = new WebSocketServer({ noServer: true });
  unix.on('upgrade', (req, socket, head) =>
    wss.handleUpgrade(req, socket, head, (ws) => ws.send(`hello ${req.url} host=${req.headers.host}`)),
  );
  await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => unix.listen(socketPath, r));
  origin = `http://127.0.0.1:${(tcp.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await Promise.all([tcp, unix].map((s) => new Promise((r) => s.close(r))));
  rmSync(dir, { recursive: true, force: true });
});

async function refusal(p: Promise<unknown>): Promise<SandboxDeskError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SandboxDeskError);
  return err as SandboxDeskError;
}

describe('createHttpClient', () => {
  for (const kind of ['tcp', 'unix'] as const) {
    describe(`over ${kind}`, () => {
      let client: DeskClient;
      beforeAll(() => {
        client = createHttpClient(kind === 'tcp' ? { origin, token: 'tok123' } : { socketPath });
      });
      afterAll(() => client.close());

      it("returns the method's result and sends the params as JSON", async () => {
        seen.length = 0;
        await expect(client.call('listSandboxes', {})).resolves.toEqual([{ name: 'a' }]);
        expect(seen[0]!.body).toBe('{}');
        expect(seen[0]!.headers['content-type']).toBe('application/json');
        if (kind === 'tcp') {
          expect(seen[0]!.headers.authorization).toBe('Bearer tok123');
          expect(seen[0]!.headers.host).toBe(new URL(origin).host);
        } else expect(seen[0]!.headers.authorization).toBeUndefined();
      });

      it("gives the server's error back as a SandboxDeskError with its code, message and hint", async () => {
        const e = await refusal(client.call('inspectSandbox', { name: 'zz' }));
        expect(e.toJSON()).toEqual({ code: 'not_found', message: 'no sandbox named "zz"', hint: 'see `sandbox-desk sandbox list`' });
      });

      it('a connection dropped before the answer is service_unavailable, not a hang', async () => {
        const e = await refusal(client.call('exec', { sandbox: 'a', command: 'sleep 100' }));
        expect(e.code).toBe('service_unavailable');
        expect(e.message).toMatch(/closed the connection before answering/);
        // The agent's next call works on a fresh connection.
        await expect(client.call('listSandboxes', {})).resolves.toEqual([{ name: 'a' }]);
      });

      it('a connection dropped in the middle of the answer is service_unavailable', async () => {
        const e = await refusal(client.call('stopSandbox', { name: 'a' }));
        expect(e.code).toBe('service_unavailable');
      });

      it("an answer that is not Sandbox Desk's JSON says so", async () => {
        const e = await refusal(client.call('engineInfo', {}));
        expect(e.code).toBe('service_unavailable');
        expect(e.message).toMatch(/not Sandbox Desk's JSON \(HTTP 502\)/);
      });

      it('request gives raw bytes (the file-transfer routes)', async () => {
        const res = await client.request('/files/download?ticket=t1');
        const chunks: Buffer[] = [];
        for await (const c of res) chunks.push(c as Buffer);
        expect(res.statusCode).toBe(200);
        expect([...Buffer.concat(chunks)]).toEqual([0, 1, 2, 255]);
      });
    });
  }

  it('a socket nobody listens on is service_unavailable: "is not running"', async () => {
    const client = createHttpClient({ socketPath: join(dir, 'missing.sock') });
    const e = await refusal(client.call('listSandboxes', {}));
    expect(e.code).toBe('service_unavailable');
    expect(e.message).toContain(`the Sandbox Desk service at ${join(dir, 'missing.sock')} is not running (ENOENT)`);
    expect(e.hint).toBeTruthy();
    await client.close();
  });

  it('a closed client refuses further calls', async () => {
    const client = createHttpClient({ origin, token: 't' });
    await client.close();
    expect((await refusal(client.call('listSandboxes', {}))).code).toBe('service_unavailable');
  });

  it("openStream reaches the server's socket with only the grant's path (a full URL's host is ignored)", async () => {
    const client = createHttpClient({ socketPath });
    const ws = client.openStream({ url: 'ws://evil.example:1/ws/events?ticket=abc', ticket: 'abc' });
    const first = await new Promise<string>((resolve, reject) => {
      ws.once('message', (d: Buffer) => resolve(d.toString()));
      ws.once('error', reject);
    });
    ws.close();
    expect(first).toBe('hello /ws/events?ticket=abc host=localhost');
    await client.close();
  });
});
