import { createHash, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NetworkLogEntry, NetworkPolicy } from '../../shared/network-policy.js';
import { EgressProxy } from './egress-proxy.js';
import { SplicePump } from './splice-pump.js';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** Not TLS (the first byte is not 0x16): the tunnel's bytes are the test's own. */
function payload(n: number): Buffer {
  const b = randomBytes(n);
  b[0] = 0x78;
  return b;
}

/** A destination that sends `down` and records what it received, both ways at once. */
async function destination(down: Buffer): Promise<{ port: number; received: Promise<Buffer>; close(): void }> {
  let got!: (b: Buffer) => void;
  const received = new Promise<Buffer>((r) => (got = r));
  const server = net.createServer({ allowHalfOpen: true }, (s) => {
    const chunks: Buffer[] = [];
    s.on('data', (d: Buffer) => chunks.push(d));
    s.on('end', () => got(Buffer.concat(chunks)));
    s.end(down);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { port: (server.address() as net.AddressInfo).port, received, close: () => server.close() };
}

/** CONNECT through the proxy's socket, upload `up` (then EOF), return everything after the 200. */
function tunnel(sock: string, port: number, up: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const c = net.connect({ path: sock, allowHalfOpen: true });
    let head = Buffer.alloc(0);
    const body: Buffer[] = [];
    let open = false;
    c.on('data', (d: Buffer) => {
      if (open) return void body.push(d);
      head = Buffer.concat([head, d]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      if (!head.subarray(0, 12).toString().startsWith('HTTP/1.1 200')) return reject(new Error(head.toString()));
      open = true;
      body.push(head.subarray(end + 4));
      c.end(up);
    });
    c.on('error', reject);
    c.on('close', () => resolve(Buffer.concat(body)));
    c.write(`CONNECT localhost:${port} HTTP/1.1\r\nHost: localhost:${port}\r\n\r\n`);
  });
}

function hasPython(): boolean {
  try {
    execFileSync('python3', ['-c', 'pass']);
    return true;
  } catch {
    return false;
  }
}

describe.runIf(hasPython())('bulk connections handed to the splice pump (real sockets, a real pump)', () => {
  let dir: string;
  const policy: NetworkPolicy = { mode: 'allow', allow: ['localhost'] };
  const log: NetworkLogEntry[] = [];
  const pump = new SplicePump();
  const proxy = new EgressProxy({ policyOf: () => policy, log: (e) => log.push(e), pump, handoffBytes: 256 * 1024 });
  const sock = (): string => join(dir, 'p.sock');

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pump-'));
    await proxy.listen('sb', sock());
    for (let i = 0; i < 100 && !pump.ready(); i++) await new Promise((r) => setTimeout(r, 20));
  });
  afterAll(async () => {
    await proxy.close();
    pump.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('every byte both ways, in order, across the handover; one log line; the pump took it', async () => {
    expect(pump.ready()).toBe(true);
    const down = payload(12 * 2 ** 20);
    const up = payload(3 * 2 ** 20 + 17);
    const dest = await destination(down);
    try {
      const before = pump.taken;
      const got = await tunnel(sock(), dest.port, up);
      expect(got.length).toBe(down.length);
      expect(sha(got)).toBe(sha(down));
      expect(sha(await dest.received)).toBe(sha(up));
      expect(pump.taken).toBe(before + 1);
      await proxy.flushLog();
      expect(log.filter((e) => e.port === dest.port).map((e) => e.verdict)).toEqual(['allowed']);
    } finally {
      dest.close();
    }
  });

  it('a short connection stays on the proxy (no round trip to the pump)', async () => {
    const down = payload(1000);
    const dest = await destination(down);
    try {
      const before = pump.taken;
      expect(sha(await tunnel(sock(), dest.port, payload(10)))).toBe(sha(down));
      expect(pump.taken).toBe(before);
    } finally {
      dest.close();
    }
  });

  it('a destination that sends first is not handed over before the client’s first bytes passed the SNI check', async () => {
    const down = payload(4 * 2 ** 20);
    const dest = await destination(down);
    try {
      const before = pump.taken;
      const got = await new Promise<Buffer>((resolve, reject) => {
        const c = net.connect({ path: sock(), allowHalfOpen: true });
        const all: Buffer[] = [];
        let n = 0;
        c.on('data', (d: Buffer) => {
          all.push(d);
          n += d.length;
          // Everything the destination sent has arrived before the client says a word.
          if (n >= down.length + 39) c.end('x');
        });
        c.on('error', reject);
        c.on('close', () => resolve(Buffer.concat(all)));
        c.write(`CONNECT localhost:${dest.port} HTTP/1.1\r\n\r\n`);
      });
      expect(sha(got.subarray(got.indexOf('\r\n\r\n') + 4))).toBe(sha(down));
      expect(pump.taken).toBe(before);
    } finally {
      dest.close();
    }
  });

  it('several bulk connections at once; the server still closes after sockets were handed over', async () => {
    const downs = [payload(2 * 2 ** 20), payload(3 * 2 ** 20), payload(2 ** 20 + 5)];
    const dests = await Promise.all(downs.map((d) => destination(d)));
    try {
      const got = await Promise.all(dests.map((d) => tunnel(sock(), d.port, payload(2 ** 20))));
      got.forEach((g, i) => expect(sha(g)).toBe(sha(downs[i]!)));
    } finally {
      for (const d of dests) d.close();
    }
    // net.Server.close() asks the process it passed sockets to (NODE_SOCKET_NOTIFY_CLOSE): the pump answers.
    await proxy.unlisten('sb');
    await proxy.listen('sb', sock());
  });
});

describe('without a pump that can run', () => {
  it('the proxy pipes the bulk bytes itself', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pump-'));
    const pump = new SplicePump('/nonexistent/python3');
    const proxy = new EgressProxy({
      policyOf: () => ({ mode: 'allow', allow: ['localhost'] }),
      log: () => undefined,
      pump,
      handoffBytes: 1024,
    });
    const down = payload(2 * 2 ** 20);
    const dest = await destination(down);
    try {
      await proxy.listen('sb', join(dir, 'p.sock'));
      expect(sha(await tunnel(join(dir, 'p.sock'), dest.port, payload(5000)))).toBe(sha(down));
      expect(pump.ready()).toBe(false);
    } finally {
      dest.close();
      await proxy.close();
      pump.dispose();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
