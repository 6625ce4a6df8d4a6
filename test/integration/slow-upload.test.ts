/**
 * An upload slower than the server's request timeout still completes: file transfers are exempt from
 * the whole-request limit (Node's `requestTimeout`, 300 s by default, lowered here to 1.5 s through the
 * LocalServer option so the test stays short), while an ordinary API call whose body dawdles as long
 * is cut with a 408. Real parts: the local server, a Docker sandbox receiving the file.
 */
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalServer } from '../../src/api/local-server.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

const REQUEST_TIMEOUT_MS = 1500;
const CHUNKS = 8;
/** CHUNKS × PAUSE_MS is over twice the timeout. */
const PAUSE_MS = 400;

/** PUT/POST `body` in CHUNKS pieces, PAUSE_MS apart (a throttled client); resolves with the status and answer. */
function throttled(
  url: string,
  method: string,
  body: Buffer,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: { 'Content-Length': String(body.length), ...headers } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    const size = Math.ceil(body.length / CHUNKS);
    let at = 0;
    const next = () => {
      if (req.destroyed) return;
      req.write(body.subarray(at, at + size));
      at += size;
      if (at < body.length) setTimeout(next, PAUSE_MS);
      else req.end();
    };
    next();
  });
}

describe('slow uploads are not cut by the request timeout (real Docker)', () => {
  let t: TestDesk;
  let server: LocalServer;
  const sb = uniqueName('slowup');
  const call = async (method: string, params: unknown) => {
    const res = await fetch(`${server.origin}/api/call/${method}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${server.token}` },
      body: JSON.stringify({ sandbox: sb, ...(params as object) }),
    });
    return (await res.json()) as { ok: { url: string; path: string } };
  };

  beforeAll(async () => {
    t = tempDesk();
    server = new LocalServer({ desk: t.desk, requestTimeoutMs: REQUEST_TIMEOUT_MS });
    await server.listen();
    await t.desk.createSandbox({ name: sb, backend: 'docker' });
  }, 240_000);
  afterAll(async () => {
    await server.close();
    await t.dispose();
  }, 120_000);

  it('an upload that takes longer than the request timeout completes, byte-identical in the sandbox', async () => {
    const bytes = randomBytes(512 * 1024 + 7);
    const grant = (await call('fileUploadTicket', { name: 'slow.bin', size: bytes.length })).ok;
    const put = await throttled(grant.url, 'PUT', bytes);
    expect(put.status).toBe(200);
    expect(JSON.parse(put.text)).toMatchObject({ ok: { path: grant.path, bytes: bytes.length } });
    const inside = await t.desk.exec({ sandbox: sb, command: 'sha256sum slow.bin | cut -d" " -f1' });
    expect(inside.stdout.trim()).toBe(createHash('sha256').update(bytes).digest('hex'));
  }, 120_000);

  it('an API call whose body arrives as slowly is cut with 408: the timeout is there for everything else', async () => {
    const body = Buffer.from(JSON.stringify({ padding: 'x'.repeat(64) }));
    const r = await throttled(`${server.origin}/api/call/listSandboxes`, 'POST', body, {
      'Content-Type': 'application/json',
      Authorization: `Bearer ${server.token}`,
    }).catch((err: Error) => ({ status: -1, text: err.message }));
    expect(r.status).toBe(408);
    expect(r.text).toMatch(/did not arrive whole within/);
  }, 60_000);
});
