/**
 * Issue 18.1: no request may kill `serve`. A seeded generator sends a few thousand raw requests —
 * request lines, paths, percent-encodings, headers, framing, WebSocket upgrades (some with valid
 * tickets) — over raw TCP to a real `serve` child process. Each must be answered with an HTTP status
 * within the time bound, and the process must be alive after every batch. The seed is printed with any
 * failure; HARDENING_SEED replays another run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, type RawAnswer } from './raw-http.js';
import { removeHome, startServe, tempHome, type ServeChild } from './serve-child.js';
import { seededRandom as rng } from '../../src/shared/test/seeded-random.js';

const SEED = Number(process.env.HARDENING_SEED ?? 0x5eed18);
const CASES = 3000;
const BATCH = 100;
const PARALLEL = 8;

interface Case {
  name: string;
  bytes: Buffer;
}

function generator(
  seed: number,
  ctx: { port: number; uiToken: string; agentToken: string | null; sandbox: string; ticket: () => string | null },
) {
  const r = rng(seed);
  const int = (n: number) => Math.floor(r() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  const host = `127.0.0.1:${ctx.port}`;

  const escapes = [
    '%',
    '%E0',
    '%e0%80',
    '%zz',
    '%00',
    '%0A',
    '%0D%0A',
    '%2e%2e',
    '%2F',
    '%5C',
    '%C0%AF',
    '%ED%A0%80',
    '%F4%90%80%80',
    '%FF',
    '%25',
    '%20',
    '%E2%82%AC',
    '%F0%9F%98%80',
    '%%',
    '%u0041',
  ];
  const words = [
    '',
    '.',
    '..',
    'api',
    'call',
    'desktop',
    'ws',
    'terminal',
    'novnc',
    'viewer',
    'mcp',
    'assets',
    'index.html',
    'core',
    'rfb.js',
    'viewer.js',
    ctx.sandbox,
    'listSandboxes',
    'exec',
    'screenTicket',
    'a'.repeat(300),
    'é',
    '😀',
    '\\',
    ';',
    ':',
    '@',
    '!',
    '$',
    '~',
  ];
  const segment = () => {
    let s = '';
    for (let i = 0, n = 1 + int(3); i < n; i++) s += r() < 0.4 ? pick(escapes) : pick(words);
    return s;
  };
  const prefixes = [
    '/',
    '//',
    '///',
    '/api/call/',
    '/desktop/',
    '/ws/desktop/',
    '/ws/terminal/',
    '/novnc/',
    '/viewer/',
    '/mcp',
    '/assets/',
    '/api/desktop/',
    '/index.html',
    '//127.0.0.1/',
    '/./',
    '/../',
  ];
  const query = () => {
    const parts: string[] = [];
    for (let i = 0, n = int(3); i < n; i++) {
      parts.push(
        pick([
          `token=${ctx.uiToken}`,
          `token=${segment()}`,
          `ticket=${segment()}`,
          `ticket=${'0'.repeat(32)}`,
          segment(),
          `${segment()}=${segment()}`,
          '=',
          '&&',
          '%',
        ]),
      );
    }
    return parts.length ? `?${parts.join('&')}` : '';
  };
  const path = (): string => {
    const kind = r();
    if (kind < 0.05) return pick(['*', 'http://127.0.0.1/', `http://${host}//`, 'x', '', ' ', '/\t/', '/ /', '/\x7f']);
    let p = pick(prefixes);
    for (let i = 0, n = int(4); i < n; i++) p += (p.endsWith('/') ? '' : '/') + segment();
    return p + query() + (r() < 0.05 ? '#frag' : '');
  };
  const methods = [
    'GET',
    'POST',
    'PUT',
    'DELETE',
    'HEAD',
    'OPTIONS',
    'PATCH',
    'CONNECT',
    'TRACE',
    'get',
    'G E T',
    'BREW',
    'POST\0',
    'GET'.repeat(50),
  ];
  const versions = ['HTTP/1.1', 'HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/9.9', 'HTTP/1.x', 'http/1.1', ''];
  const authHeaders = () =>
    pick([
      [],
      [`Authorization: Bearer ${ctx.uiToken}`],
      ...(ctx.agentToken ? [[`Authorization: Bearer ${ctx.agentToken}`]] : []),
      [`Authorization: Bearer ${segment()}`],
      ['Authorization: Basic Zm9vOmJhcg=='],
      ['Authorization:'],
      [`Cookie: sdesk_token=${ctx.uiToken}`],
      [`Cookie: ${segment()}=${segment()}; sdesk_token=${segment()}`],
    ]);
  const hostHeaders = () =>
    pick([
      [`Host: ${host}`],
      [`Host: ${host}`],
      [`Host: localhost:${ctx.port}`],
      ['Host: evil.example'],
      [],
      [`Host: ${host}`, 'Host: evil.example'],
      ['Host: '],
      [`Host: ${segment()}`],
    ]);
  const otherHeaders = () => {
    const hs: string[] = [];
    for (let i = 0, n = int(4); i < n; i++) {
      hs.push(
        pick([
          'Origin: https://evil.example',
          `Origin: http://${host}`,
          'Origin: null',
          'Accept: application/json, text/event-stream',
          'Content-Type: application/json',
          'Content-Type: text/plain',
          `X-${segment().replace(/[^A-Za-z0-9-]/g, '') || 'Y'}: ${segment()}`,
          'Expect: 100-continue',
          `Referer: http://${host}/${segment()}`,
          `Cookie: ${'a=b; '.repeat(50)}`,
          `X-Long: ${'x'.repeat(20_000)}`,
          'X-Bin: \x01\x02\x7f',
          'X-Fold: a\r\n b',
          'X-Latin: \xe9\xff',
          'Bad Header: x',
          ': empty-name',
          'Transfer-Encoding: identity',
        ]),
      );
    }
    return hs;
  };
  const body = (): string =>
    pick([
      '',
      '{}',
      '[]',
      'null',
      '"x"',
      '{',
      '{"name":7}',
      `{"sandbox":"${segment().replace(/"/g, '')}"}`,
      '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
      '{"jsonrpc":"2.0","method":"initialize"}',
      '{"jsonrpc":"2.0","id":{"x":1},"method":"x"}',
      '\xff\xfe',
      'é€😀'.repeat(int(2000)),
      JSON.stringify({ command: 'x'.repeat(int(70_000)) }),
    ]);

  const request = (): Case => {
    const m = pick(methods);
    const target = path();
    const b = Buffer.from(body(), 'latin1');
    const framing = r();
    const hs = [...hostHeaders(), ...authHeaders(), ...otherHeaders()];
    let payload = b;
    if (framing < 0.75) hs.push(`Content-Length: ${b.length}`);
    else if (framing < 0.85) {
      hs.push('Transfer-Encoding: chunked');
      payload = Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n0\r\n\r\n')]);
    } else if (framing < 0.9)
      hs.push(
        pick([
          'Content-Length: -1',
          'Content-Length: abc',
          'Content-Length: 1, 2',
          `Content-Length: ${b.length}\r\nTransfer-Encoding: chunked`,
          'Transfer-Encoding: chunked, gzip',
          'Content-Length: 99999999999999999999',
        ]),
      );
    else payload = Buffer.alloc(0);
    hs.push('Connection: close');
    const head = `${m} ${target} ${pick(versions)}`.trimEnd();
    return {
      name: `${head} [${hs.map((h) => h.split(':')[0]).join(',')}]`,
      bytes: Buffer.concat([Buffer.from(`${head}\r\n${hs.join('\r\n')}\r\n\r\n`, 'latin1'), payload]),
    };
  };

  const upgrade = (): Case => {
    const ticket = r() < 0.3 ? ctx.ticket() : null;
    const target = ticket ? `/ws/desktop/${pick([segment(), ctx.sandbox, '%E0', pick(escapes)])}?ticket=${ticket}` : path();
    const hs = [
      ...hostHeaders(),
      ...(r() < 0.9 ? ['Upgrade: websocket'] : [pick(['Upgrade: h2c', 'Upgrade: ', `Upgrade: ${segment()}`])]),
      'Connection: Upgrade',
      ...(r() < 0.8 ? ['Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=='] : r() < 0.5 ? [`Sec-WebSocket-Key: ${segment()}`] : []),
      ...(r() < 0.8 ? ['Sec-WebSocket-Version: 13'] : [pick(['Sec-WebSocket-Version: 8', 'Sec-WebSocket-Version: x'])]),
      ...(r() < 0.3 ? [pick(['Origin: https://evil.example', `Origin: http://${host}`])] : []),
      ...(r() < 0.2 ? otherHeaders() : []),
    ];
    const head = `GET ${target} ${r() < 0.9 ? 'HTTP/1.1' : pick(versions)}`.trimEnd();
    return {
      name: `UPGRADE ${head}${ticket ? ' (valid ticket)' : ''}`,
      bytes: Buffer.from(`${head}\r\n${hs.join('\r\n')}\r\n\r\n`, 'latin1'),
    };
  };

  const garbage = (): Case => {
    let s = '';
    for (let i = 0, n = 1 + int(200); i < n; i++) s += String.fromCharCode(0x20 + int(0xdf));
    return { name: `garbage ${JSON.stringify(s.slice(0, 40))}`, bytes: Buffer.from(`${s}\r\n\r\n`, 'latin1') };
  };

  return (): Case => {
    const k = r();
    return k < 0.6 ? request() : k < 0.9 ? upgrade() : garbage();
  };
}

/** The requests issue 18 names: each crashed the unfixed server. */
function knownCrashers(ctx: { port: number; ticket: () => string | null }): Case[] {
  const host = `Host: 127.0.0.1:${ctx.port}`;
  const ws = 'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13';
  return [
    { name: 'curl --path-as-is //', bytes: Buffer.from(`GET // HTTP/1.1\r\n${host}\r\nConnection: close\r\n\r\n`) },
    {
      name: 'a no-cors fetch from another origin to //',
      bytes: Buffer.from(
        `GET // HTTP/1.1\r\n${host}\r\nOrigin: https://evil.example\r\nSec-Fetch-Mode: no-cors\r\nConnection: close\r\n\r\n`,
      ),
    },
    { name: 'a raw GET // upgrade', bytes: Buffer.from(`GET // HTTP/1.1\r\n${host}\r\n${ws}\r\n\r\n`) },
    {
      name: 'ws /ws/desktop/%E0 with a valid ticket',
      bytes: Buffer.from(`GET /ws/desktop/%E0?ticket=${ctx.ticket()} HTTP/1.1\r\n${host}\r\n${ws}\r\n\r\n`),
    },
  ];
}

describe('request fuzzer: serve answers every request and never dies', () => {
  let s: ServeChild;
  const sandbox = `fz${process.pid}`;
  const tickets: string[] = [];

  const alive = async (): Promise<boolean> => {
    if (s.child.exitCode !== null || s.child.signalCode !== null) return false;
    const res = await fetch(`${s.origin}/api/call/listSandboxes`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${s.uiToken}` },
      body: '{}',
    }).catch(() => null);
    return res?.status === 200;
  };

  beforeAll(async () => {
    const home = tempHome('fuzz');
    const made = (await import('./serve-child.js')).cliIn(home)(['sandbox', 'create', sandbox, '--backend', 'local', '--json']);
    expect(made.status, made.stderr).toBe(0);
    s = await startServe(home);
    for (let i = 0; i < 120; i++) {
      const res = await fetch(`${s.origin}/api/call/screenTicket`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${s.uiToken}` },
        body: JSON.stringify({ sandbox }),
      });
      tickets.push(((await res.json()) as { ok: { ticket: string } }).ok.ticket);
    }
  });
  afterAll(async () => {
    await s?.stop();
    if (s) removeHome(s.home);
  });

  it('the requests of issue 18 get a status (400, 404, …) and the server stays up', async () => {
    for (const c of knownCrashers({ port: s.port, ticket: () => tickets.pop() ?? null })) {
      const a = await rawRequest(s.port, c.bytes);
      expect(a.outcome, `${c.name}: ${a.head.slice(0, 200)}`).toBe('answered');
      expect(a.status! >= 400 && a.status! < 500, `${c.name}: ${a.head.slice(0, 200)}`).toBe(true);
      expect(await alive(), `serve died after: ${c.name}\n${s.stderr().slice(-2000)}`).toBe(true);
    }
  });

  it(`${CASES} seeded cases (seed ${SEED}): each answered with a status, no crash, no hang`, async () => {
    const next = generator(SEED, {
      port: s.port,
      uiToken: s.uiToken,
      agentToken: s.agentToken,
      sandbox,
      ticket: () => tickets.pop() ?? null,
    });
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    for (let done = 0; done < CASES; done += BATCH) {
      const batch = Array.from({ length: Math.min(BATCH, CASES - done) }, next);
      const answers: RawAnswer[] = [];
      for (let i = 0; i < batch.length; i += PARALLEL)
        answers.push(...(await Promise.all(batch.slice(i, i + PARALLEL).map((c) => rawRequest(s.port, c.bytes)))));
      answers.forEach((a, i) => {
        if (a.outcome !== 'answered') failures.push(`#${done + i} ${batch[i]!.name}: ${a.outcome}`);
        else statuses.set(a.status!, (statuses.get(a.status!) ?? 0) + 1);
      });
      expect(
        await alive(),
        `serve died in cases ${done}..${done + batch.length - 1} (seed ${SEED}):\n${batch
          .map((c) => c.name)
          .join('\n')
          .slice(0, 4000)}\n${s.stderr().slice(-2000)}`,
      ).toBe(true);
    }
    expect(failures.slice(0, 20), `seed ${SEED}`).toEqual([]);
    // The generator reached the routes, not just the parser's refusals.
    expect([...statuses.keys()]).toEqual(expect.arrayContaining([101, 400, 401, 403, 404]));
    expect(s.stderr()).not.toMatch(/TypeError|URIError|uncaught/i);
  });
});
