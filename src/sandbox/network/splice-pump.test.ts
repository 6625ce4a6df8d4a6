import { createHash, randomBytes } from 'node:crypto';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NetworkLogEntry, NetworkPolicy } from '../../shared/network-policy.js';
import { EgressProxy, type EgressProxyOptions } from './egress-proxy.js';
import { SplicePump } from './splice-pump.js';
import { relayScript } from '../docker/egress-relay-script.js';
import { freeLoopbackPort } from '../qemu/free-port.js';
import type { ProxySource } from './proxy-protocol.js';

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

/**
 * CONNECT through the proxy (its Unix socket, or a relay's TCP port on 127.0.0.1), upload `up` (then
 * EOF), return everything after the 200.
 */
function tunnel(via: string | number, port: number, up: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const c =
      typeof via === 'string'
        ? net.connect({ path: via, allowHalfOpen: true })
        : net.connect({ port: via, host: '127.0.0.1', allowHalfOpen: true });
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

/** A proxy whose pump cannot start (no python3 there), in a folder of its own; all of it gone after `fn`. */
async function withDeadPump(
  opts: Partial<EgressProxyOptions>,
  fn: (proxy: EgressProxy, pump: SplicePump, dir: string) => Promise<void>,
): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'pump-'));
  const pump = new SplicePump('/nonexistent/python3');
  const proxy = new EgressProxy({ policyOf: () => ({ mode: 'allow', allow: [] }), log: () => undefined, pump, ...opts });
  try {
    await fn(proxy, pump, dir);
  } finally {
    await proxy.close();
    pump.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('without a pump that can run', () => {
  it('a relay’s link is closed at once and the proxy says why (the sandbox fails closed)', async () => {
    const said: string[] = [];
    await withDeadPump({ say: (m) => said.push(m) }, async (proxy, _pump, dir) => {
      await proxy.listen('sb', join(dir, 'p.sock'), join(dir, 'r.sock'));
      await new Promise<void>((resolve, reject) => {
        const link = net.connect({ path: join(dir, 'r.sock') });
        link.on('error', reject);
        link.on('close', () => resolve());
        link.resume();
      });
      expect(said).toEqual([expect.stringMatching(/^sb: the egress helper \(python3\) cannot run: .*fails closed/)]);
    });
  });

  it('answering: only while both socket files are there (the daemon listens again otherwise)', async () => {
    await withDeadPump({}, async (proxy, _pump, dir) => {
      expect(proxy.answering('sb')).toBe(false);
      await proxy.listen('sb', join(dir, 'p.sock'), join(dir, 'r.sock'));
      expect(proxy.answering('sb')).toBe(true);
      rmSync(join(dir, 'r.sock'));
      expect(proxy.answering('sb')).toBe(false);
      await proxy.unlisten('sb');
      await proxy.listen('sb', join(dir, 'p.sock'), join(dir, 'r.sock'));
      expect(proxy.answering('sb')).toBe(true);
      rmSync(join(dir, 'p.sock'));
      expect(proxy.answering('sb')).toBe(false);
    });
  });

  it('the proxy pipes the bulk bytes itself', async () => {
    const down = payload(2 * 2 ** 20);
    const dest = await destination(down);
    try {
      await withDeadPump({ policyOf: () => ({ mode: 'allow', allow: ['localhost'] }), handoffBytes: 1024 }, async (proxy, pump, dir) => {
        await proxy.listen('sb', join(dir, 'p.sock'));
        expect(sha(await tunnel(join(dir, 'p.sock'), dest.port, payload(5000)))).toBe(sha(down));
        expect(pump.ready()).toBe(false);
      });
    } finally {
      dest.close();
    }
  });
});

/** Resolves once something accepts on 127.0.0.1:port. */
async function accepting(port: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise<boolean>((r) => {
      const c = net.connect({ port, host: '127.0.0.1' }, () => (c.destroy(), r(true)));
      c.on('error', () => r(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`nothing accepts on ${port}`);
}

/** Everything a connection to the relay gets back before it closes (a refused one: nothing). */
function answerOf(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = net.connect({ port, host: '127.0.0.1' });
    const got: Buffer[] = [];
    c.on('data', (d: Buffer) => got.push(d));
    c.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? resolve(Buffer.concat(got).toString()) : reject(e)));
    c.on('close', () => resolve(Buffer.concat(got).toString()));
    c.write(request);
  });
}

/** Whether a connection to the port is refused (nobody listens there). */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = net.connect({ port, host: '127.0.0.1' }, () => (c.destroy(), resolve(false)));
    c.on('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED'));
  });
}

async function until(what: () => Promise<boolean>, label: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await what()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`never: ${label}`);
}

describe.runIf(hasPython())(
  'the relay passes its listening socket; the proxy accepts the sandbox’s connections itself (the real relay script, a real helper)',
  () => {
    let dir: string;
    let port: number;
    let relay: ChildProcess;
    const policy: NetworkPolicy = { mode: 'allow', allow: ['localhost'] };
    const log: NetworkLogEntry[] = [];
    const sources: ProxySource[] = [];
    const pump = new SplicePump();
    const proxy = new EgressProxy({
      policyOf: () => policy,
      log: (e) => log.push(e),
      pump,
      handoffBytes: 256 * 1024,
      processOf: (_s, source) => (sources.push(source), Promise.resolve(null)),
    });

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'relay-'));
      await proxy.listen('sb', join(dir, 'proxy.sock'), join(dir, 'relay.sock'));
      port = await freeLoopbackPort();
      relay = spawn('python3', ['-u', '-c', relayScript(port, dir)], { stdio: 'ignore' });
      await accepting(port);
    });
    afterAll(async () => {
      relay.kill('SIGCONT');
      relay.kill('SIGKILL');
      await proxy.close();
      pump.dispose();
      rmSync(dir, { recursive: true, force: true });
    });

    it('a small exchange both ways, half-closed by the client; its source is the client’s own address and port', async () => {
      const down = payload(1000);
      const dest = await destination(down);
      try {
        const before = pump.taken;
        const up = payload(77);
        expect(sha(await tunnel(port, dest.port, up))).toBe(sha(down));
        expect(sha(await dest.received)).toBe(sha(up));
        expect(pump.taken).toBe(before);
        const src = sources.at(-1)!;
        expect(src).toMatchObject({ ip: '127.0.0.1', dstIp: '127.0.0.1', dstPort: port });
        expect(src.port).toBeGreaterThan(0);
        await proxy.flushLog();
        expect(log.filter((e) => e.port === dest.port).map((e) => e.verdict)).toEqual(['allowed']);
      } finally {
        dest.close();
      }
    });

    it('bulk: every byte both ways, spliced socket to socket by the helper', async () => {
      const down = payload(8 * 2 ** 20);
      const up = payload(2 * 2 ** 20 + 3);
      const dest = await destination(down);
      try {
        const before = pump.taken;
        const got = await tunnel(port, dest.port, up);
        expect(sha(got)).toBe(sha(down));
        expect(sha(await dest.received)).toBe(sha(up));
        expect(pump.taken).toBe(before + 1);
      } finally {
        dest.close();
      }
    });

    it('no process between: with the relay frozen (SIGSTOP) connections are still accepted and answered', async () => {
      const down = payload(3000);
      const dest = await destination(down);
      relay.kill('SIGSTOP');
      try {
        const got = await Promise.all(Array.from({ length: 5 }, () => tunnel(port, dest.port, payload(10))));
        for (const g of got) expect(sha(g)).toBe(sha(down));
      } finally {
        relay.kill('SIGCONT');
        dest.close();
      }
    });

    it('a denied destination is refused on the sandbox’s own socket', async () => {
      const answer = await answerOf(port, 'CONNECT example.org:443 HTTP/1.1\r\n\r\n');
      expect(answer).toMatch(/^HTTP\/1\.1 403 /);
      expect(answer).toContain('not on the allow list');
    });

    it('many connections at once, each passed and answered', async () => {
      const down = payload(5000);
      const dest = await destination(down);
      try {
        const got = await Promise.all(Array.from({ length: 40 }, () => tunnel(port, dest.port, payload(10))));
        for (const g of got) expect(sha(g)).toBe(sha(down));
      } finally {
        dest.close();
      }
    });

    it('no proxy, no network: once the proxy stops serving the sandbox its address refuses connections; linked again once it is back', async () => {
      await proxy.unlisten('sb');
      // Both copies of the listener are gone: the proxy's at once, the relay's when it sees its link end.
      await until(() => refused(port), 'the address refuses');
      await proxy.listen('sb', join(dir, 'proxy.sock'), join(dir, 'relay.sock'));
      await accepting(port);
      const answer = await answerOf(port, 'CONNECT example.org:443 HTTP/1.1\r\n\r\n');
      expect(answer).toMatch(/^HTTP\/1\.1 403 /);
    });
  },
);
