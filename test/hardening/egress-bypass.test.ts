/**
 * Standing attempts to get around a sandbox's network policy through the egress proxy (issue 35, items
 * 7, 8 and 12): TLS record framing around the SNI check, allowed names that lead to this machine's own
 * services, and request heads that carry a second Host or userinfo. The real proxy and its real pump,
 * served on a Unix socket of the test's own (as QEMU's guestfwd connects); the destinations are the
 * test's own servers on loopback. The only thing faked is DNS "the agent controls" (the resolve hook).
 */
import { lookup } from 'node:dns/promises';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { hostname, networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NetworkPolicy } from '../../src/shared/network-policy.js';
import { EgressProxy } from '../../src/sandbox/network/egress-proxy.js';
import { logFileOf, policiesFile, readLog, writePolicies } from '../../src/sandbox/network/network-files.js';
import { helloMessage, records } from './tls-hello.js';

/** A destination of the test's own: every connection it took, and the bytes each brought. */
async function destination(): Promise<{ port: number; conns: Buffer[][]; close(): void }> {
  const conns: Buffer[][] = [];
  const server = net.createServer((s) => {
    const got: Buffer[] = [];
    conns.push(got);
    s.on('data', (d: Buffer) => {
      got.push(d);
      const text = Buffer.concat(got).toString('latin1');
      if (text.includes('\r\n\r\n')) s.end(`HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n${text}`);
    });
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { port: (server.address() as net.AddressInfo).port, conns, close: () => server.close() };
}

/** Sends `first`, then (after a 200) each of `then` in its own write; everything answered until the close. */
function talk(sock: string, first: string, ...then: Buffer[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = net.connect({ path: sock, allowHalfOpen: true });
    let out = '';
    let sent = false;
    c.on('data', (d: Buffer) => {
      out += d.toString('latin1');
      if (sent || !out.includes('\r\n\r\n')) return;
      sent = true;
      if (!out.startsWith('HTTP/1.1 200')) return void c.end(); // refused: nothing more to say
      void (async () => {
        for (const b of then) {
          c.write(b);
          await new Promise((r) => setTimeout(r, 5)); // separate reads in the pump, as separate packets would be
        }
        c.end();
      })();
    });
    c.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? resolve(out) : reject(e)));
    c.on('close', () => resolve(out));
    c.write(first);
  });
}

const bytesOf = (conns: Buffer[][]): number => conns.reduce((n, c) => n + Buffer.concat(c).length, 0);

describe('the egress policy holds against a hostile sandbox (real proxy and pump, loopback destinations)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'egress-bypass-'));
  const sock = join(dir, 'p.sock');
  /** DNS the agent controls: names under agent.test resolve to what a test sets; the rest as this machine resolves them. */
  const agentDns = new Map<string, string[]>();
  const proxy = new EgressProxy({
    policiesFile: policiesFile(dir),
    keepNameMs: 0,
    resolve: async (h) => agentDns.get(h) ?? (await lookup(h, { all: true, verbatim: true })).map((a) => a.address),
  });
  const setPolicy = (p: NetworkPolicy): void => writePolicies(dir, { sb: p });
  const lastLine = () => readLog(dir, 'sb', 100_000).at(-1)!;
  let dest: Awaited<ReturnType<typeof destination>>;

  beforeAll(async () => {
    dest = await destination();
    await proxy.listen('sb', { socket: sock, log: logFileOf(dir, 'sb') });
  });
  afterAll(async () => {
    dest.close();
    await proxy.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('item 7: the ClientHello is read whole however it is framed, and must name the CONNECT host', () => {
    const connect = (): string => `CONNECT localhost:${dest.port} HTTP/1.1\r\n\r\n`;
    beforeAll(() => setPolicy({ mode: 'allow', allow: ['localhost', '127.0.0.1/32'] }));

    const fronted: Array<[string, Buffer[]]> = [
      ['a zero-length handshake record first', [records(helloMessage('evil.example'), [0])]],
      ['the ClientHello split across two records', [records(helloMessage('evil.example'), [30])]],
      [
        'split across five records, zero-length ones between, in separate writes',
        [records(helloMessage('evil.example'), [1, 0, 3, 0, 40])],
      ],
      [
        'the records themselves cut mid-header across writes',
        ((b) => [b.subarray(0, 2), b.subarray(2, 9), b.subarray(9)])(records(helloMessage('evil.example'), [0, 10])),
      ],
    ];
    for (const [what, writes] of fronted) {
      it(`${what}: SNI evil.example is refused, logged, and not a byte reaches the destination`, async () => {
        const before = bytesOf(dest.conns);
        const r = await talk(sock, connect(), ...writes);
        expect(r).toMatch(/^HTTP\/1.1 200/);
        expect(lastLine()).toMatchObject({ verdict: 'denied', host: 'localhost', reason: expect.stringContaining('SNI evil.example') });
        expect(bytesOf(dest.conns)).toBe(before);
      });
    }

    it('split across records and naming the CONNECT host: passes on, every byte as sent', async () => {
      const hello = records(helloMessage('LOCALHOST'), [0, 7, 0]);
      const before = dest.conns.length;
      await talk(sock, connect(), hello.subarray(0, 12), hello.subarray(12));
      expect(lastLine()).toMatchObject({ verdict: 'allowed', host: 'localhost' });
      await expect.poll(() => dest.conns.length).toBe(before + 1);
      await expect.poll(() => Buffer.concat(dest.conns.at(-1)!).equals(hello)).toBe(true);
    });

    const unreadable: Array<[string, Buffer, string]> = [
      ['no server_name at all, to a name', records(helloMessage(null)), 'names no host'],
      ['two server_name extensions', records(helloMessage('localhost', { twoNames: 'evil.example' })), 'two server_name'],
      ['another handshake message than a ClientHello', Buffer.from([0x16, 3, 1, 0, 4, 2, 0, 0, 0]), 'not a ClientHello'],
      [
        'an alert record in the middle of the ClientHello',
        Buffer.concat([records(helloMessage('localhost').subarray(0, 10)), Buffer.from([0x15, 3, 3, 0, 2, 1, 0])]),
        'other than a handshake',
      ],
      ['a record longer than TLS allows', Buffer.from([0x16, 3, 1, 0x40, 0x01]), 'longer than TLS allows'],
      ['a ClientHello cut short, then the end', records(helloMessage('localhost')).subarray(0, 40), 'ended before'],
      [
        'a ClientHello whose extensions overrun it',
        ((m) => (m.writeUInt16BE(m.readUInt16BE(m.length - 7 - 2) + 1, m.length - 7 - 2), records(m)))(helloMessage(null)),
        'extensions',
      ],
    ];
    for (const [what, bytes, why] of unreadable) {
      it(`${what}: refused (what cannot be read is not passed on), logged with the reason`, async () => {
        const before = bytesOf(dest.conns);
        await talk(sock, connect(), bytes);
        expect(lastLine()).toMatchObject({ verdict: 'denied', reason: expect.stringContaining(why) });
        expect(bytesOf(dest.conns)).toBe(before);
      });
    }

    it('a ClientHello begun and never finished: refused once its 10 s are up (it was held for good)', async () => {
      const before = bytesOf(dest.conns);
      const started = Date.now();
      const r = await new Promise<string>((resolve, reject) => {
        const c = net.connect(sock);
        let out = '';
        c.on('data', (d: Buffer) => {
          if (out === '') c.write(records(helloMessage('evil.example')).subarray(0, 30)); // then nothing more
          out += d.toString('latin1');
        });
        c.on('error', reject);
        c.on('close', () => resolve(out));
        c.write(connect());
      });
      expect(r).toMatch(/^HTTP\/1.1 200/);
      expect(Date.now() - started).toBeGreaterThanOrEqual(9_000);
      expect(lastLine()).toMatchObject({ verdict: 'denied', reason: expect.stringContaining('did not arrive whole in time') });
      expect(bytesOf(dest.conns)).toBe(before);
    }, 20_000);

    it('a raw-IP CONNECT not covered by a CIDR stays refused', async () => {
      expect(await talk(sock, `CONNECT 127.0.0.2:${dest.port} HTTP/1.1\r\n\r\n`)).toMatch(/^HTTP\/1.1 403/);
      expect(lastLine()).toMatchObject({ verdict: 'denied', reason: expect.stringContaining('raw IP') });
    });
  });

  describe('item 8: an allowed name does not open this machine’s own or private addresses', () => {
    const ownV4 = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
    const cases: Array<[string, string[], string]> = [
      ['127.0.0.1', ['127.0.0.1'], 'loopback'],
      ['an IPv4-mapped loopback', ['::ffff:127.0.0.1'], 'loopback'],
      ['::1', ['::1'], 'loopback'],
      ['link-local (cloud metadata)', ['169.254.169.254'], 'link-local'],
      ['a private range', ['10.1.2.3'], 'private'],
      ['CGNAT', ['100.64.0.9'], 'CGNAT'],
      ['unique-local IPv6', ['fd00::2'], 'private'],
      ['unspecified', ['0.0.0.0'], 'unspecified'],
      ...(ownV4 ? [["this machine's own interface address", [ownV4], 'private|own address'] as [string, string[], string]] : []),
    ];
    for (const [what, addrs, why] of cases) {
      it(`a wildcard under DNS the agent controls resolving to ${what}: refused (CONNECT and plain HTTP), logged, the address not told`, async () => {
        const name = `x${Math.random().toString(36).slice(2, 8)}.agent.test`;
        agentDns.set(name, addrs);
        setPolicy({ mode: 'allow', allow: ['*.agent.test'] });
        const before = dest.conns.length;
        for (const head of [
          `CONNECT ${name}:${dest.port} HTTP/1.1\r\n\r\n`,
          `GET http://${name}:${dest.port}/ HTTP/1.1\r\nHost: ${name}:${dest.port}\r\n\r\n`,
        ]) {
          const r = await talk(sock, head);
          expect(r).toMatch(/^HTTP\/1.1 403/);
          expect(r).toContain('host-local or private');
          for (const a of addrs) expect(r).not.toContain(a);
          expect(lastLine()).toMatchObject({ verdict: 'denied', host: name, reason: expect.stringMatching(new RegExp(why)) });
        }
        expect(dest.conns.length).toBe(before);
      });
    }

    it('`--allow localhost` and this machine’s own hostname, resolved for real: refused', async () => {
      for (const name of ['localhost', hostname().toLowerCase()]) {
        setPolicy({ mode: 'allow', allow: [name] });
        const before = dest.conns.length;
        expect(await talk(sock, `CONNECT ${name}:${dest.port} HTTP/1.1\r\n\r\n`), name).toMatch(/^HTTP\/1.1 403/);
        expect(lastLine()).toMatchObject({ verdict: 'denied', host: name, reason: expect.stringContaining('127.') });
        expect(dest.conns.length).toBe(before);
      }
    });

    it('a CIDR entry covering the address lets the name reach it; one address refused of two, the other dialled', async () => {
      setPolicy({ mode: 'allow', allow: ['localhost', '127.0.0.1/32'] });
      const r = await talk(sock, `GET http://localhost:${dest.port}/c HTTP/1.1\r\nHost: localhost:${dest.port}\r\n\r\n`);
      expect(r).toMatch(/^HTTP\/1.1 200/);
      agentDns.set('two.agent.test', ['10.9.9.9', '127.0.0.1']);
      setPolicy({ mode: 'allow', allow: ['*.agent.test', '127.0.0.1/32'] });
      expect(await talk(sock, `GET http://two.agent.test:${dest.port}/ HTTP/1.1\r\nHost: two.agent.test:${dest.port}\r\n\r\n`)).toMatch(
        /^HTTP\/1.1 200/,
      );
    });
  });

  describe('item 12: one Host, and the URL’s host[:port] only', () => {
    beforeAll(() => setPolicy({ mode: 'allow', allow: ['localhost', '127.0.0.1/32'] }));

    it('two Host headers (the second another host): 400, nothing forwarded', async () => {
      const before = dest.conns.length;
      const r = await talk(
        sock,
        `GET http://localhost:${dest.port}/ HTTP/1.1\r\nHost: localhost:${dest.port}\r\nHost: evil.example\r\n\r\n`,
      );
      expect(r).toMatch(/^HTTP\/1.1 400/);
      expect(r).toContain('2 Host headers');
      expect(dest.conns.length).toBe(before);
    });

    it('a userinfo URL (other.example:1@host): 400 saying where credentials go, nothing forwarded', async () => {
      const before = dest.conns.length;
      const r = await talk(sock, `GET http://evil.example:1@localhost:${dest.port}/ HTTP/1.1\r\n\r\n`);
      expect(r).toMatch(/^HTTP\/1.1 400/);
      expect(r).toContain('Authorization');
      expect(dest.conns.length).toBe(before);
    });

    it('a backslash or %-escape in the authority: 400 (read one way here, another by a URL parser)', async () => {
      for (const target of [`http://localhost:${dest.port}\\@evil.example/`, `http://local%68ost:${dest.port}/`]) {
        expect(await talk(sock, `GET ${target} HTTP/1.1\r\n\r\n`), target).toMatch(/^HTTP\/1.1 400/);
      }
    });

    it('without a Host header the request goes on with exactly one: the URL’s host:port', async () => {
      const r = await talk(sock, `GET http://localhost:${dest.port}/h HTTP/1.1\r\n\r\n`);
      expect(r).toMatch(/^HTTP\/1.1 200/);
      expect(r.match(/^Host: .*$/gim)).toEqual([`Host: localhost:${dest.port}`]);
    });
  });
});
