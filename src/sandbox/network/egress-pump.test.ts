/**
 * The egress proxy's compiled data path (egress-pump.c) with the proxy that drives it: real sockets,
 * the real pump binary, and — for a docker sandbox's way in — the real relay script run on this
 * machine, passing its listening socket as it does from a sandbox's namespace.
 */
import { createHash, randomBytes } from 'node:crypto';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NetworkLogEntry, NetworkPolicy } from '../../shared/network-policy.js';
import { EgressProxy } from './egress-proxy.js';
import { parseFound, pumpBinary, PUMP_MISSING } from './egress-pump.js';
import { relayScript } from '../docker/egress-relay-script.js';
import { freeLoopbackPort } from '../qemu/free-port.js';

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

/** CONNECT through the proxy (a Unix socket, or a relay's TCP port on 127.0.0.1), upload `up` (then EOF), return everything after the 200. */
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

describe('the pump binary', () => {
  it('is built, and its source compiles without a warning', () => {
    expect(pumpBinary()).toMatch(/dist\/native\/egress-pump$/);
    execFileSync(process.env.CC || 'cc', ['-fsyntax-only', '-Wall', '-Wextra', '-Werror', 'src/sandbox/network/egress-pump.c'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  });

  it('reads the process it found: host pid, pid in the sandbox, ancestry, name and command line', () => {
    const hex = (s: string): string => Buffer.from(s).toString('hex');
    expect(parseFound(`4242,7,5.1,${hex('curl')},${hex('curl\0-s\0http://x/\0')}`)).toEqual({
      hostPid: 4242,
      pid: 7,
      ancestry: [5, 1],
      comm: 'curl',
      cmdline: 'curl\0-s\0http://x/\0',
    });
    expect(parseFound(`4242,1,-,${hex('sh')},`)).toMatchObject({ pid: 1, ancestry: [], cmdline: '' });
    for (const bad of ['', '-', '1,2,3', '0,1,-,,', '1,x,-,,', '1,2,3.x,,']) expect(parseFound(bad), bad).toBeNull();
  });
});

describe('without the pump', () => {
  it('a sandbox cannot be served, and the error says how to build the pump', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nopump-'));
    const proxy = new EgressProxy({ policyOf: () => ({ mode: 'allow', allow: [] }), log: () => undefined, pumpPath: null });
    try {
      await expect(proxy.listen('sb', join(dir, 'p.sock'))).rejects.toThrow(PUMP_MISSING);
      expect(proxy.answering('sb')).toBe(false);
    } finally {
      await proxy.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('bytes through the pump (a Unix socket in, loopback servers out)', () => {
  let dir: string;
  const policy: NetworkPolicy = { mode: 'allow', allow: ['localhost'] };
  const log: NetworkLogEntry[] = [];
  const proxy = new EgressProxy({ policyOf: () => policy, log: (e) => log.push(e) });
  const sock = (): string => join(dir, 'p.sock');

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pump-'));
    await proxy.listen('sb', sock());
  });
  afterAll(async () => {
    await proxy.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('every byte both ways, in order; one log line', async () => {
    const down = payload(12 * 2 ** 20);
    const up = payload(3 * 2 ** 20 + 17);
    const dest = await destination(down);
    try {
      const got = await tunnel(sock(), dest.port, up);
      expect(got.length).toBe(down.length);
      expect(sha(got)).toBe(sha(down));
      expect(sha(await dest.received)).toBe(sha(up));
      expect(log.filter((e) => e.port === dest.port).map((e) => e.verdict)).toEqual(['allowed']);
    } finally {
      dest.close();
    }
  });

  it('a destination that speaks first is heard before the client has said a word', async () => {
    const down = payload(4 * 2 ** 20);
    const dest = await destination(down);
    try {
      const got = await new Promise<Buffer>((resolve, reject) => {
        const c = net.connect({ path: sock(), allowHalfOpen: true });
        const all: Buffer[] = [];
        let n = 0;
        c.on('data', (d: Buffer) => {
          all.push(d);
          n += d.length;
          if (n >= down.length + 39) c.end('x');
        });
        c.on('error', reject);
        c.on('close', () => resolve(Buffer.concat(all)));
        c.write(`CONNECT localhost:${dest.port} HTTP/1.1\r\n\r\n`);
      });
      expect(sha(got.subarray(got.indexOf('\r\n\r\n') + 4))).toBe(sha(down));
      expect((await dest.received).toString()).toBe('x');
    } finally {
      dest.close();
    }
  });

  it('several bulk connections at once', async () => {
    const downs = [payload(2 * 2 ** 20), payload(3 * 2 ** 20), payload(2 ** 20 + 5)];
    const dests = await Promise.all(downs.map((d) => destination(d)));
    try {
      const got = await Promise.all(dests.map((d) => tunnel(sock(), d.port, payload(2 ** 20))));
      got.forEach((g, i) => expect(sha(g)).toBe(sha(downs[i]!)));
    } finally {
      for (const d of dests) d.close();
    }
  });

  it('answering: only while both socket files are there (the daemon listens again otherwise)', async () => {
    await proxy.listen('sb2', join(dir, 'p2.sock'), join(dir, 'r2.sock'));
    expect(proxy.answering('sb2')).toBe(true);
    rmSync(join(dir, 'r2.sock'));
    expect(proxy.answering('sb2')).toBe(false);
    await proxy.unlisten('sb2');
    await proxy.listen('sb2', join(dir, 'p2.sock'), join(dir, 'r2.sock'));
    expect(proxy.answering('sb2')).toBe(true);
    rmSync(join(dir, 'p2.sock'));
    expect(proxy.answering('sb2')).toBe(false);
    await proxy.unlisten('sb2');
  });
});

/** Resolves once something accepts on 127.0.0.1:port. */
async function accepting(port: number): Promise<void> {
  await until(
    () =>
      new Promise<boolean>((r) => {
        const c = net.connect({ port, host: '127.0.0.1' }, () => (c.destroy(), r(true)));
        c.on('error', () => r(false));
      }),
    `something accepts on ${port}`,
  );
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

async function until(what: () => Promise<boolean> | boolean, label: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await what()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`never: ${label}`);
}

describe.runIf(hasPython())(
  'the relay passes its listening socket; the pump accepts the sandbox’s connections itself (the real relay script)',
  () => {
    let dir: string;
    let port: number;
    let relay: ChildProcess;
    const policy: NetworkPolicy = { mode: 'allow', allow: ['localhost'] };
    const log: NetworkLogEntry[] = [];
    const said: string[] = [];
    /** When set, each log line takes this long to write (the proxy's thread is held meanwhile) and its end is noted. */
    let slowLogMs = 0;
    let loggedAt = 0n;
    const proxy = new EgressProxy({
      policyOf: () => policy,
      log: (e) => {
        log.push(e);
        if (slowLogMs > 0) {
          const until = performance.now() + slowLogMs;
          while (performance.now() < until);
        }
        loggedAt = process.hrtime.bigint();
      },
      say: (m) => said.push(m),
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
      rmSync(dir, { recursive: true, force: true });
    });

    it('a small exchange both ways, half-closed by the client', async () => {
      const down = payload(1000);
      const dest = await destination(down);
      try {
        const up = payload(77);
        expect(sha(await tunnel(port, dest.port, up))).toBe(sha(down));
        expect(sha(await dest.received)).toBe(sha(up));
        expect(log.filter((e) => e.port === dest.port).map((e) => e.verdict)).toEqual(['allowed']);
      } finally {
        dest.close();
      }
    });

    it('bulk: every byte both ways', async () => {
      const down = payload(8 * 2 ** 20);
      const up = payload(2 * 2 ** 20 + 3);
      const dest = await destination(down);
      try {
        expect(sha(await tunnel(port, dest.port, up))).toBe(sha(down));
        expect(sha(await dest.received)).toBe(sha(up));
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

    it('an allowed answer reaches the client only once its line is on the log (the pump holds it meanwhile)', async () => {
      const down = payload(100);
      const dest = await destination(down);
      slowLogMs = 300;
      // An address: dialled at once, with no name to resolve first (the answer could only wait for the log).
      policy.allow = ['localhost', '127.0.0.1'];
      try {
        // The client is a process of its own (this one's thread is held while the line is written); both
        // clocks are CLOCK_MONOTONIC.
        const client = spawn(
          'python3',
          [
            '-c',
            `import socket,time; s=socket.create_connection(("127.0.0.1",${port})); s.sendall(b"CONNECT 127.0.0.1:${dest.port} HTTP/1.1\\r\\n\\r\\n"); d=s.recv(100); print(time.monotonic_ns(), d[:12].decode())`,
          ],
          { stdio: ['ignore', 'pipe', 'inherit'] },
        );
        let out = '';
        client.stdout.on('data', (d: Buffer) => (out += d.toString()));
        await new Promise((r) => client.on('exit', r));
        const m = /^(\d+) (.*)$/.exec(out.trim());
        expect(m?.[2]).toBe('HTTP/1.1 200');
        expect(BigInt(m![1]!)).toBeGreaterThanOrEqual(loggedAt);
        expect(log.at(-1)).toMatchObject({ port: dest.port, verdict: 'allowed' });
      } finally {
        slowLogMs = 0;
        policy.allow = ['localhost'];
        dest.close();
      }
    });

    it('a denied destination is refused on the sandbox’s own socket, its line on the log first', async () => {
      const answer = await answerOf(port, 'CONNECT example.org:443 HTTP/1.1\r\n\r\n');
      expect(answer).toMatch(/^HTTP\/1\.1 403 /);
      expect(answer).toContain('not on the allow list');
      expect(log.at(-1)).toMatchObject({ host: 'example.org', port: 443, verdict: 'denied' });
    });

    it('many connections at once, each answered', async () => {
      const down = payload(5000);
      const dest = await destination(down);
      try {
        const got = await Promise.all(Array.from({ length: 40 }, () => tunnel(port, dest.port, payload(10))));
        for (const g of got) expect(sha(g)).toBe(sha(down));
      } finally {
        dest.close();
      }
    });

    it.runIf(process.getuid?.() === 0)(
      'the process behind a connection: the client’s own, its pid and its parent (this test)',
      async () => {
        const down = payload(100);
        const dest = await destination(down);
        try {
          // A child process of this test opens the connection and holds it until it has its answer.
          const client = spawn(
            'python3',
            [
              '-c',
              `import socket,sys; s=socket.create_connection(("127.0.0.1",${port})); s.sendall(b"CONNECT localhost:${dest.port} HTTP/1.1\\r\\n\\r\\n"); s.shutdown(socket.SHUT_WR); sys.stdout.buffer.write(s.recv(100))`,
              'marker-for-the-log',
              // A long command line (an exec wrapper's script is kilobytes): the pump's line must carry it whole.
              'x'.repeat(5000),
            ],
            { stdio: ['ignore', 'pipe', 'inherit'] },
          );
          let out = '';
          client.stdout.on('data', (d: Buffer) => (out += d.toString()));
          await new Promise((r) => client.on('exit', r));
          expect(out).toMatch(/^HTTP\/1\.1 200/);
          const line = log.filter((e) => e.port === dest.port).at(-1);
          expect(line?.process).toMatch(new RegExp(`^python3 \\(pid ${client.pid}\\): \\S*python3 -c import socket.*…$`));
          expect(line?.pid).toBe(client.pid);
          expect(line?.ancestry?.[0]).toBe(process.pid);
        } finally {
          dest.close();
        }
      },
    );

    it('the pump killed: the address refuses at once (fails closed); started again, linked again, answering', async () => {
      const pid = proxy.pumpPid!;
      expect(pid).toBeGreaterThan(0);
      process.kill(pid, 'SIGKILL');
      await until(() => refused(port), 'the address refuses');
      await until(() => proxy.pumpPid !== null && proxy.pumpPid !== pid, 'a new pump');
      await accepting(port);
      const answer = await answerOf(port, 'CONNECT example.org:443 HTTP/1.1\r\n\r\n');
      expect(answer).toMatch(/^HTTP\/1\.1 403 /);
      expect(said).toContainEqual(expect.stringMatching(/the egress pump exited \(killed by SIGKILL\).*starting it again/));
    });

    it('no proxy, no network: once the proxy stops serving the sandbox its address refuses connections; linked again once it is back', async () => {
      await proxy.unlisten('sb');
      await until(() => refused(port), 'the address refuses');
      await proxy.listen('sb', join(dir, 'proxy.sock'), join(dir, 'relay.sock'));
      await accepting(port);
      const answer = await answerOf(port, 'CONNECT example.org:443 HTTP/1.1\r\n\r\n');
      expect(answer).toMatch(/^HTTP\/1\.1 403 /);
    });
  },
);
