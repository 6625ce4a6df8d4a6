import http from 'node:http';
import net from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NetworkPolicy } from '../../shared/network-policy.js';
import { EgressProxy, splitAuthority } from './egress-proxy.js';
import { logFileOf, policiesFile, readLog, writePolicies } from './network-files.js';

/** Sends raw bytes to the proxy's socket and returns everything it answers until it closes. */
function raw(sock: string, text: string | Buffer, then?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = net.connect(sock);
    let out = '';
    let sentThen = false;
    c.on('data', (d) => {
      out += d.toString('latin1');
      if (then && !sentThen && out.includes('\r\n\r\n') && out.startsWith('HTTP/1.1 200')) {
        sentThen = true;
        c.write(then);
      }
    });
    c.on('error', reject);
    c.on('close', () => resolve(out));
    c.write(text);
  });
}

/**
 * The destinations are on this machine's loopback: a name reaches them only through a CIDR entry that
 * covers the address (host-local.ts), as a person would allow it; 127.0.0.2 stays a raw IP not allowed.
 */
const LOOPBACK = '127.0.0.1/32';

describe('the egress proxy (real sockets: a Unix socket in, a loopback server out)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'egress-'));
  const sock = join(dir, 'p.sock');
  let server: http.Server;
  let port: number;
  /** The sandbox's policy, as the app stores it (policies.json): the proxy reads it from there. */
  const setPolicy = (p: NetworkPolicy): void => writePolicies(dir, { sb: p });
  /** The sandbox's connection log, as the pump wrote it. */
  const log = () => readLog(dir, 'sb', 100_000);
  const proxy = new EgressProxy({ policiesFile: policiesFile(dir) });

  beforeAll(async () => {
    setPolicy({ mode: 'allow', allow: [] });
    server = http.createServer((req, res) => res.end(`hello ${req.url}`));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as net.AddressInfo).port;
    await proxy.listen('sb', { socket: sock, log: logFileOf(dir, 'sb') });
  });
  afterAll(async () => {
    await proxy.close();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('plain HTTP: an allowed host is forwarded, another is refused with 403 and how to allow it; both logged', async () => {
    setPolicy({ mode: 'allow', allow: [`localhost:${port}`, LOOPBACK] });
    const ok = await raw(sock, `GET http://localhost:${port}/x HTTP/1.1\r\nHost: localhost:${port}\r\nConnection: close\r\n\r\n`);
    expect(ok).toMatch(/^HTTP\/1.1 200/);
    expect(ok).toContain('hello /x');
    const no = await raw(sock, `GET http://127.0.0.2:${port}/ HTTP/1.1\r\nHost: 127.0.0.2:${port}\r\nConnection: close\r\n\r\n`);
    expect(no).toMatch(/^HTTP\/1.1 403/);
    expect(no).toContain('--allow 127.0.0.2');
    expect(
      log()
        .slice(-2)
        .map((e) => [e.host, e.verdict, e.kind]),
    ).toEqual([
      ['localhost', 'allowed', 'http'],
      ['127.0.0.2', 'denied', 'http'],
    ]);
    expect(log().at(-1)!.reason).toContain('raw IP');
  });

  it('a Host header that disagrees with the URL is refused', async () => {
    setPolicy({ mode: 'allow', allow: [`localhost:${port}`, LOOPBACK] });
    const r = await raw(sock, `GET http://localhost:${port}/ HTTP/1.1\r\nHost: evil.example:${port}\r\nConnection: close\r\n\r\n`);
    expect(r).toMatch(/^HTTP\/1.1 403/);
    expect(log().at(-1)).toMatchObject({ verdict: 'denied', reason: expect.stringContaining('Host header') });
  });

  it('CONNECT: an allowed authority tunnels, a raw IP or an IPv6 address without a CIDR is refused', async () => {
    setPolicy({ mode: 'allow', allow: [`localhost:${port}`, LOOPBACK] });
    const ok = await raw(
      sock,
      `CONNECT localhost:${port} HTTP/1.1\r\nHost: localhost:${port}\r\n\r\n`,
      `GET /t HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`,
    );
    expect(ok).toMatch(/^HTTP\/1.1 200 Connection Established/);
    expect(ok).toContain('hello /t');
    for (const target of [`127.0.0.2:${port}`, '[::1]:443', '1.1.1.1:443', 'dns.google:443']) {
      const no = await raw(sock, `CONNECT ${target} HTTP/1.1\r\n\r\n`);
      expect(no, target).toMatch(/^HTTP\/1.1 403/);
    }
    expect(
      log()
        .slice(-4)
        .every((e) => e.verdict === 'denied'),
    ).toBe(true);
  });

  it('a CIDR allows a raw IP; the list is read per connection (a change takes effect on the next one)', async () => {
    setPolicy({ mode: 'allow', allow: ['127.0.0.0/8'] });
    expect(
      await raw(sock, `CONNECT 127.0.0.1:${port} HTTP/1.1\r\n\r\n`, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    ).toContain('hello /');
    setPolicy({ mode: 'offline', allow: ['127.0.0.0/8'] });
    expect(await raw(sock, `CONNECT 127.0.0.1:${port} HTTP/1.1\r\n\r\n`)).toMatch(/^HTTP\/1.1 403/);
    expect(log().at(-1)!.reason).toBe('the sandbox is offline');
  });

  it('a TLS ClientHello whose SNI names another host than CONNECT did is cut off and logged', async () => {
    setPolicy({ mode: 'allow', allow: [`localhost:${port}`, LOOPBACK] });
    const hello = clientHello('evil.example');
    const r = await raw(sock, `CONNECT localhost:${port} HTTP/1.1\r\n\r\n`, hello.toString('latin1'));
    expect(r).toMatch(/^HTTP\/1.1 200/);
    expect(log().at(-1)).toMatchObject({ verdict: 'denied', reason: expect.stringContaining('SNI evil.example') });
  });

  it('a ClientHello sent in pieces is still read whole and checked (no way around the SNI check by splitting it)', async () => {
    setPolicy({ mode: 'allow', allow: [`localhost:${port}`, LOOPBACK] });
    const hello = clientHello('evil.example');
    const r = await new Promise<string>((resolve, reject) => {
      const c = net.connect(sock);
      let out = '';
      c.on('data', (d: Buffer) => {
        const first = out === '';
        out += d.toString('latin1');
        if (!first) return;
        // Three pieces, the name in the last: the record header, the start of the hello, the rest.
        c.write(hello.subarray(0, 3));
        setTimeout(() => c.write(hello.subarray(3, 20)), 30);
        setTimeout(() => c.write(hello.subarray(20)), 60);
      });
      c.on('error', reject);
      c.on('close', () => resolve(out));
      c.write(`CONNECT localhost:${port} HTTP/1.1\r\n\r\n`);
    });
    expect(r).toMatch(/^HTTP\/1.1 200/);
    expect(r).not.toContain('hello');
    expect(log().at(-1)).toMatchObject({ verdict: 'denied', reason: expect.stringContaining('SNI evil.example') });
  });

  it('a ClientHello naming the CONNECT host passes on (the destination gets it whole)', async () => {
    const got: Buffer[] = [];
    const dest = net.createServer((s) => s.on('data', (d: Buffer) => (got.push(d), s.end('ok'))));
    await new Promise<void>((r) => dest.listen(0, '127.0.0.1', () => r()));
    const p = (dest.address() as net.AddressInfo).port;
    setPolicy({ mode: 'allow', allow: [`localhost:${p}`, LOOPBACK] });
    const hello = clientHello('LocalHost');
    const r = await raw(sock, `CONNECT localhost:${p} HTTP/1.1\r\n\r\n`, hello.toString('latin1'));
    dest.close();
    expect(r).toMatch(/^HTTP\/1.1 200 Connection Established\r\n\r\nok$/);
    expect(Buffer.concat(got).equals(hello)).toBe(true);
  });

  it('a destination that is not a host name or an address is refused (400) before any decision', async () => {
    setPolicy({ mode: 'allow', allow: ['*.example.com'] });
    const before = log().length;
    for (const target of ['a,b.example.com:443', 'a%00.example.com:443', 'a b.example.com:443']) {
      expect(await raw(sock, `CONNECT ${target} HTTP/1.1\r\n\r\n`), target).toMatch(/^HTTP\/1.1 400/);
    }
    expect(await raw(sock, 'GET http://a_b%2C.example.com/ HTTP/1.1\r\n\r\n')).toMatch(/^HTTP\/1.1 400/);
    expect(log().length).toBe(before);
  });

  it('an unreachable allowed destination answers 502, never hangs', async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const p = (closed.address() as net.AddressInfo).port;
    await new Promise((r) => closed.close(r));
    setPolicy({ mode: 'allow', allow: ['127.0.0.1'] });
    expect(await raw(sock, `CONNECT 127.0.0.1:${p} HTTP/1.1\r\n\r\n`)).toMatch(/^HTTP\/1.1 502/);
  });

  it('a head too large or not a head is refused, never hangs', async () => {
    expect(await raw(sock, 'hello there\r\n\r\n')).toMatch(/^HTTP\/1.1 400/);
    expect(await raw(sock, `GET http://x/ HTTP/1.1\r\nX: ${'a'.repeat(70 * 1024)}`)).toMatch(/^HTTP\/1.1 431/);
  });

  it('a client that half-closes (the relay passes its EOF on) still gets the whole answer', async () => {
    // The destination answers only once it has seen the client's EOF, and at length.
    const answer = Buffer.alloc(3 * 2 ** 20, 0x61);
    const dest = net.createServer({ allowHalfOpen: true }, (s) => {
      let n = 0;
      s.on('data', (d: Buffer) => (n += d.length));
      s.on('end', () => s.end(Buffer.concat([Buffer.from(`got ${n}\n`), answer])));
    });
    await new Promise<void>((r) => dest.listen(0, '127.0.0.1', () => r()));
    const destPort = (dest.address() as net.AddressInfo).port;
    setPolicy({ mode: 'allow', allow: [`localhost:${destPort}`, LOOPBACK] });
    const out = await new Promise<string>((resolve, reject) => {
      const c = net.connect({ path: sock, allowHalfOpen: true });
      let text = '';
      c.on('data', (d: Buffer) => {
        const first = text === '';
        text += d.toString('latin1');
        if (first) c.end('xyz');
      });
      c.on('error', reject);
      c.on('close', () => resolve(text));
      c.write(`CONNECT localhost:${destPort} HTTP/1.1\r\n\r\n`);
    });
    dest.close();
    expect(out).toMatch(/^HTTP\/1.1 200/);
    expect(out).toContain('got 3\n');
    expect(out.length - out.indexOf('got 3\n') - 'got 3\n'.length).toBe(answer.length);
  });

  it('splits authorities', () => {
    expect(splitAuthority('Example.com:443', null)).toEqual({ host: 'example.com', port: 443 });
    expect(splitAuthority('[::1]:80', null)).toEqual({ host: '::1', port: 80 });
    expect(splitAuthority('example.com', null)).toBeNull();
    expect(splitAuthority('example.com:0', null)).toBeNull();
  });
});

/** A minimal TLS 1.2 ClientHello with one server_name extension. */
function clientHello(name: string): Buffer {
  const host = Buffer.from(name, 'ascii');
  const sniList = Buffer.concat([Buffer.from([0]), u16(host.length), host]);
  const sniExt = Buffer.concat([u16(0), u16(sniList.length + 2), u16(sniList.length), sniList]);
  const exts = Buffer.concat([u16(sniExt.length), sniExt]);
  const body = Buffer.concat([
    Buffer.from([3, 3]),
    Buffer.alloc(32),
    Buffer.from([0]),
    u16(2),
    Buffer.from([0x13, 0x01]),
    Buffer.from([1, 0]),
    exts,
  ]);
  const hs = Buffer.concat([Buffer.from([1]), Buffer.from([0, body.length >> 8, body.length & 0xff]), body]);
  return Buffer.concat([Buffer.from([0x16, 3, 1]), u16(hs.length), hs]);
}

function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
}
