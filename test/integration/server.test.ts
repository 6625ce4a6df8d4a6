/**
 * The local server as the browser mode uses it: token, cookie, Origin and Host checks, the contract's
 * methods over HTTP, and a terminal over a ticketed WebSocket into a real Docker sandbox.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { LocalServer } from '../../src/api/local-server.js';
import { CLOSE } from '../../src/api/tickets.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

describe('browser-mode server', () => {
  let t: TestDesk;
  let server: LocalServer;
  const sb = uniqueName('srv');
  const call = (method: string, params: unknown, headers: Record<string, string> = { Authorization: `Bearer ${server.token}` }) =>
    fetch(`${server.origin}/api/call/${method}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify(params),
    });

  beforeAll(async () => {
    t = tempDesk();
    server = new LocalServer({ desk: t.desk });
    await server.listen();
  });
  afterAll(async () => {
    await server.close();
    await t.dispose();
  });

  it('listens on 127.0.0.1 only', () => {
    expect(server.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('serves nothing without the token; the token in the URL becomes an HttpOnly SameSite cookie', async () => {
    expect((await fetch(`${server.origin}/`)).status).toBe(401);
    expect((await call('listSandboxes', {}, {})).status).toBe(401);
    // A browser opening the app without the token gets a page that says how to get in, not raw JSON.
    const refused = await fetch(`${server.origin}/`, { headers: { Accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await refused.text()).toMatch(/sandbox-desk serve[\s\S]*\?token=/);
    const page = await fetch(server.appUrl());
    expect([200, 503]).toContain(page.status);
    const cookie = page.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^sdesk_token=[0-9a-f]+; HttpOnly; SameSite=Strict; Path=\//);
    const viaCookie = await call('listSandboxes', {}, { Cookie: cookie.split(';')[0]! });
    expect(viaCookie.status).toBe(200);
    expect(await viaCookie.json()).toEqual({ ok: [] });
  });

  it('refuses a cross-origin call and a foreign Host header', async () => {
    expect((await call('listSandboxes', {}, { Authorization: `Bearer ${server.token}`, Origin: 'https://evil.example' })).status).toBe(403);
    // fetch() will not send a foreign Host; a plain request will (as a DNS-rebinding page would).
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${server.origin}/api/call/listSandboxes`,
        { method: 'POST', headers: { Authorization: `Bearer ${server.token}`, Host: 'evil.example' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end('{}');
    });
    expect(status).toBe(403);
  });

  it('the contract over HTTP: validation errors and unknown methods come back as data', async () => {
    const bad = await call('createSandbox', { name: 'a/b', backend: 'docker' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: 'invalid_input', message: expect.stringMatching(/name/) } });
    const unknown = await call('dropTables', {});
    expect(await unknown.json()).toMatchObject({ error: { code: 'invalid_input', message: expect.stringMatching(/unknown method/) } });
    const backends = (await (await call('backends', {})).json()) as { ok: { name: string; defaultCwd: string | null }[] };
    expect(backends.ok.map((b) => b.name)).toEqual(expect.arrayContaining(['local', 'docker']));
    expect(backends.ok.find((b) => b.name === 'docker')?.defaultCwd).toBe('~');
  });

  it('a terminal: WebSocket needs a valid ticket; typing cd moves the session record, measured by the shell', async () => {
    const created = (await (await call('createSandbox', { name: sb, backend: 'docker' })).json()) as { ok: unknown };
    expect(created).toHaveProperty('ok');
    const grant = (
      (await (await call('terminalOpen', { sandbox: sb, session: 'tty-1', cols: 100, rows: 30 })).json()) as {
        ok: { url: string; terminalId: string; cwd: string };
      }
    ).ok;
    expect(grant.cwd).toBe('/home/agent');
    // No ticket / wrong ticket: refused.
    const refused = await new Promise<number>((resolve) => {
      const ws = new WebSocket(grant.url.replace(/ticket=.*/, 'ticket=bad'));
      ws.on('close', (code) => resolve(code));
      ws.on('error', () => undefined);
    });
    expect(refused).toBe(CLOSE.ticketUnknown);

    const ws = new WebSocket(grant.url);
    let screen = '';
    ws.on('message', (d: Buffer) => (screen += d.toString()));
    await new Promise((r) => ws.once('open', r));
    await expect.poll(() => screen, { timeout: 15_000 }).toMatch(/\$ $/m);
    ws.send('cd /tmp && pwd && stty size\r');
    await expect.poll(() => screen, { timeout: 10_000 }).toMatch(/\r\/tmp\r\n30 100\r\n/);
    await expect
      .poll(
        async () =>
          ((await (await call('listSessions', { sandbox: sb })).json()) as { ok: { key: string; cwd: string }[] }).ok.find(
            (s) => s.key === 'tty-1',
          )?.cwd,
        { timeout: 10_000 },
      )
      .toBe('/tmp');
    // Resize follows the pane.
    expect(await (await call('terminalResize', { terminalId: grant.terminalId, cols: 120, rows: 40 })).json()).toEqual({
      ok: { ok: true },
    });
    // The PTY's new size reaches the sandbox asynchronously (SIGWINCH → docker → the exec's tty): ask until it shows.
    await expect
      .poll(
        async () => {
          ws.send('stty size\r');
          await new Promise((r) => setTimeout(r, 300));
          return screen;
        },
        { timeout: 15_000 },
      )
      .toMatch(/40 120/);
    // A fake report printed by a program does not move the record: it lacks the terminal's nonce.
    ws.send("printf '\\033]7;file://sdesk-0000/etc\\007'; echo\r");
    await new Promise((r) => setTimeout(r, 500));
    expect(
      ((await (await call('listSessions', { sandbox: sb })).json()) as { ok: { key: string; cwd: string }[] }).ok.find(
        (s) => s.key === 'tty-1',
      )?.cwd,
    ).toBe('/tmp');
    ws.close();
    // The ticket was single-use.
    const again = await new Promise<number>((resolve) => {
      const w2 = new WebSocket(grant.url);
      w2.on('close', (code) => resolve(code));
      w2.on('error', () => undefined);
    });
    expect(again).toBe(CLOSE.ticketUsed);
  });
});
