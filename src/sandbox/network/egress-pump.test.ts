/**
 * The egress proxy's compiled data path (pump/*.c) with the proxy that drives it: real sockets, the
 * real pump binary, and — for a docker sandbox's way in — the real relay script run on this machine,
 * passing its listening socket as it does from a sandbox's namespace.
 */
import { createHash, randomBytes } from 'node:crypto';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NetworkPolicy } from '../../shared/network-policy.js';
import { EgressProxy } from './egress-proxy.js';
import { pumpBinary, PUMP_MISSING } from './egress-pump.js';
import { logFileOf, olderOf, policiesFile, readLog, writePolicies } from './network-files.js';
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

/** A plain-HTTP destination that answers each request with the head it received. */
async function echoHeads(): Promise<{ port: number; close(): void }> {
  const server = net.createServer((s) => {
    let got = '';
    s.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      if (got.includes('\r\n\r\n')) s.end(`HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n${got}`);
    });
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { port: (server.address() as net.AddressInfo).port, close: () => server.close() };
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

/** Everything a connection to `via` (a Unix socket or a port on 127.0.0.1) gets back for `request` before it closes. */
function answerOf(via: string | number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = typeof via === 'string' ? net.connect(via) : net.connect({ port: via, host: '127.0.0.1' });
    const got: Buffer[] = [];
    c.on('data', (d: Buffer) => got.push(d));
    c.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? resolve(Buffer.concat(got).toString()) : reject(e)));
    c.on('close', () => resolve(Buffer.concat(got).toString()));
    c.write(request);
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

/** A data dir of its own, a proxy on it, a sandbox `sb` served on a Unix socket (removed after). */
function servedSandbox(opts: { keepNameMs?: number; logMaxBytes?: number; resolve?: (h: string) => Promise<string[]> } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'pump-'));
  const proxy = new EgressProxy({ policiesFile: policiesFile(dir), ...opts });
  const sock = join(dir, 'p.sock');
  const log = () => readLog(dir, 'sb', 100_000);
  return {
    dir,
    proxy,
    sock,
    setPolicy: (p: NetworkPolicy): void => writePolicies(dir, { sb: p }),
    log,
    /** The log's lines for connections to one destination port (each test has a destination of its own). */
    linesTo: (port: number) => log().filter((e) => e.port === port),
    listen: () => proxy.listen('sb', { socket: sock, log: logFileOf(dir, 'sb') }),
    dispose: async () => {
      await proxy.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe('the pump binary', () => {
  it('is built, and its sources compile without a warning', () => {
    expect(pumpBinary()).toMatch(/dist\/native\/egress-pump$/);
    const dir = 'src/sandbox/network/pump';
    const units = readdirSync(dir)
      .filter((f) => f.endsWith('.c'))
      .map((f) => join(dir, f));
    execFileSync(process.env.CC || 'cc', ['-fsyntax-only', '-Wall', '-Wextra', '-Werror', ...units], { stdio: ['ignore', 'pipe', 'pipe'] });
  });
});

describe('without the pump', () => {
  it('a sandbox cannot be served, and the error says how to build the pump', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nopump-'));
    const proxy = new EgressProxy({ policiesFile: policiesFile(dir), pumpPath: null });
    try {
      await expect(proxy.listen('sb', { socket: join(dir, 'p.sock'), log: logFileOf(dir, 'sb') })).rejects.toThrow(PUMP_MISSING);
      expect(proxy.answering('sb')).toBe(false);
    } finally {
      await proxy.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('bytes through the pump (a Unix socket in, loopback servers out)', () => {
  const t = servedSandbox();

  beforeAll(async () => {
    t.setPolicy({ mode: 'allow', allow: ['localhost', '127.0.0.1/32'] }); // a name to loopback: only with a CIDR (host-local.ts)
    await t.listen();
  });
  afterAll(() => t.dispose());

  it('every byte both ways, in order; one log line', async () => {
    const down = payload(12 * 2 ** 20);
    const up = payload(3 * 2 ** 20 + 17);
    const dest = await destination(down);
    try {
      const got = await tunnel(t.sock, dest.port, up);
      expect(got.length).toBe(down.length);
      expect(sha(got)).toBe(sha(down));
      expect(sha(await dest.received)).toBe(sha(up));
      expect(t.linesTo(dest.port).map((e) => e.verdict)).toEqual(['allowed']);
    } finally {
      dest.close();
    }
  });

  it('a destination that speaks first is heard before the client has said a word', async () => {
    const down = payload(4 * 2 ** 20);
    const dest = await destination(down);
    try {
      const got = await new Promise<Buffer>((resolve, reject) => {
        const c = net.connect({ path: t.sock, allowHalfOpen: true });
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
      const got = await Promise.all(dests.map((d) => tunnel(t.sock, d.port, payload(2 ** 20))));
      got.forEach((g, i) => expect(sha(g)).toBe(sha(downs[i]!)));
    } finally {
      for (const d of dests) d.close();
    }
  });

  it('plain HTTP goes on in origin form: the path as sent, without the proxy’s headers, Connection: close', async () => {
    const echo = await echoHeads();
    try {
      const request = (extra: string): string =>
        `GET http://localhost:${echo.port}/a/../b?q=1%20 HTTP/1.1\r\nHost: localhost:${echo.port}\r\nProxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive\r\nX-Kept: yes${extra}\r\n\r\n`;
      // The first is decided by the proxy, the second answered on its kept verdict: the same rewrite.
      for (const extra of ['', '\r\nKeep-Alive: 5']) {
        const got = await answerOf(t.sock, request(extra));
        const head = got.slice(got.indexOf('\r\n\r\n') + 4);
        expect(head).toBe(`GET /a/../b?q=1%20 HTTP/1.1\r\nHost: localhost:${echo.port}\r\nX-Kept: yes\r\nConnection: close\r\n\r\n`);
      }
    } finally {
      echo.close();
    }
  });

  it('answering: only while both socket files are there (the daemon listens again otherwise)', async () => {
    const at = { socket: join(t.dir, 'p2.sock'), relay: join(t.dir, 'r2.sock'), log: logFileOf(t.dir, 'sb2') };
    await t.proxy.listen('sb2', at);
    expect(t.proxy.answering('sb2')).toBe(true);
    rmSync(at.relay);
    expect(t.proxy.answering('sb2')).toBe(false);
    await t.proxy.unlisten('sb2');
    await t.proxy.listen('sb2', at);
    expect(t.proxy.answering('sb2')).toBe(true);
    rmSync(at.socket);
    expect(t.proxy.answering('sb2')).toBe(false);
    await t.proxy.unlisten('sb2');
  });

  it('a socket path too long for a Unix socket is refused, named whole and why (never cut to fit and served elsewhere)', async () => {
    const long = join(t.dir, `${'x'.repeat(110)}.sock`);
    await expect(t.proxy.listen('sb3', { socket: long, log: logFileOf(t.dir, 'sb3') })).rejects.toThrow(
      `cannot listen on ${long}: File name too long`,
    );
    expect(t.proxy.answering('sb3')).toBe(false);
    expect(readdirSync(t.dir).filter((f) => f.startsWith('xxx'))).toEqual([]);
  });
});

describe('kept verdicts: the same request again is the proxy’s own answer again, while the policies are unchanged', () => {
  let resolved = 0;
  const t = servedSandbox({
    keepNameMs: 400,
    resolve: (h) => {
      resolved++;
      // two.test: an address where nothing listens first (the pump tries the next).
      return Promise.resolve(h === 'localhost' ? ['127.0.0.1'] : h === 'two.test' ? ['127.0.0.3', '::1', '127.0.0.1'] : []);
    },
  });
  let echo: { port: number; close(): void };
  const get = (host = `localhost:${echo.port}`): Promise<string> =>
    answerOf(t.sock, `GET http://${host}/k HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);

  beforeAll(async () => {
    echo = await echoHeads();
    t.setPolicy({ mode: 'allow', allow: ['localhost', '127.0.0.0/8', '::1', 'two.test'] });
    await t.listen();
  });
  afterAll(async () => {
    echo.close();
    await t.dispose();
  });

  it('answered without asking the proxy, and on the log all the same', async () => {
    const asked = t.proxy.asked;
    const lines = t.log().length;
    for (let i = 0; i < 3; i++) expect(await get()).toMatch(/^HTTP\/1\.1 200/);
    expect(t.proxy.asked).toBe(asked + 1);
    expect(
      t
        .log()
        .slice(lines)
        .map((e) => [e.host, e.port, e.verdict]),
    ).toEqual([
      ['localhost', echo.port, 'allowed'],
      ['localhost', echo.port, 'allowed'],
      ['localhost', echo.port, 'allowed'],
    ]);
  });

  it('another Host header, another port or CONNECT is another question', async () => {
    await get();
    const asked = t.proxy.asked;
    expect(await answerOf(t.sock, `GET http://localhost:${echo.port}/k HTTP/1.1\r\nHost: evil.example\r\n\r\n`)).toMatch(/^HTTP\/1\.1 403/);
    expect(await get(`127.0.0.1:${echo.port}`)).toMatch(/^HTTP\/1\.1 200/);
    const tunnelled = await answerOf(t.sock, `CONNECT localhost:${echo.port} HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n`);
    expect(tunnelled).toMatch(/^HTTP\/1\.1 200 Connection Established/);
    expect(t.proxy.asked).toBe(asked + 3);
    expect(t.log().at(-3)).toMatchObject({ verdict: 'denied', reason: expect.stringContaining('Host header') });
  });

  it('a change of the policy takes effect on the very next connection', async () => {
    expect(await get()).toMatch(/^HTTP\/1\.1 200/);
    t.setPolicy({ mode: 'allow', allow: ['127.0.0.1'] });
    expect(await get()).toMatch(/^HTTP\/1\.1 403/);
    expect(t.log().at(-1)).toMatchObject({ host: 'localhost', verdict: 'denied', reason: 'not on the allow list' });
    t.setPolicy({ mode: 'allow', allow: ['localhost', '127.0.0.0/8', '::1', 'two.test'] });
    expect(await get()).toMatch(/^HTTP\/1\.1 200/);
    t.setPolicy({ mode: 'offline', allow: [] });
    expect(await get()).toMatch(/^HTTP\/1\.1 403/);
    expect(t.log().at(-1)).toMatchObject({ verdict: 'denied', reason: 'the sandbox is offline' });
    t.setPolicy({ mode: 'allow', allow: ['localhost', '127.0.0.0/8', '::1', 'two.test'] });
  });

  it('a name’s verdict holds as long as the proxy said (its addresses with it), then the proxy is asked again', async () => {
    expect(await get()).toMatch(/^HTTP\/1\.1 200/);
    const [asked, before] = [t.proxy.asked, resolved];
    expect(await get()).toMatch(/^HTTP\/1\.1 200/);
    expect([t.proxy.asked, resolved]).toEqual([asked, before]);
    await new Promise((r) => setTimeout(r, 500));
    expect(await get()).toMatch(/^HTTP\/1\.1 200/);
    expect([t.proxy.asked, resolved]).toEqual([asked + 1, before + 1]);
  });

  it('a name with several addresses: tried in turn until one answers, the first time and on the kept verdict', async () => {
    for (let i = 0; i < 2; i++) expect(await get(`two.test:${echo.port}`)).toMatch(/^HTTP\/1\.1 200/);
    expect(
      t
        .log()
        .slice(-2)
        .map((e) => [e.host, e.verdict]),
    ).toEqual([
      ['two.test', 'allowed'],
      ['two.test', 'allowed'],
    ]);
  });

  it('refusals are never kept: each is the proxy’s, with its line', async () => {
    const asked = t.proxy.asked;
    for (let i = 0; i < 2; i++) expect(await answerOf(t.sock, 'CONNECT example.org:443 HTTP/1.1\r\n\r\n')).toMatch(/^HTTP\/1\.1 403/);
    expect(t.proxy.asked).toBe(asked + 2);
    expect(
      t
        .log()
        .slice(-2)
        .map((e) => [e.host, e.verdict]),
    ).toEqual([
      ['example.org', 'denied'],
      ['example.org', 'denied'],
    ]);
  });
});

describe('the connection log, written by the pump', () => {
  const t = servedSandbox({ logMaxBytes: 4096 });
  const file = (): string => logFileOf(t.dir, 'sb');
  const refuse = (host: string): Promise<string> => answerOf(t.sock, `CONNECT ${host}:443 HTTP/1.1\r\n\r\n`);

  beforeAll(async () => {
    t.setPolicy({ mode: 'allow', allow: [] });
    await t.listen();
  });
  afterAll(() => t.dispose());

  it('past its limit a log becomes its older half and a new one starts; nothing is lost across the turn', async () => {
    let i = 0;
    while ((statSync(file(), { throwIfNoEntry: false })?.size ?? 0) <= 4096) await refuse(`h${i++}.test`);
    await refuse('turned.test');
    expect(statSync(olderOf(file())).size).toBeGreaterThan(4096);
    expect(statSync(file()).size).toBeLessThan(1000);
    const all = t.log().map((e) => e.host);
    expect(all.at(-1)).toBe('turned.test');
    expect(all).toHaveLength(i + 1);
  });

  it('a log removed starts anew (a sandbox removed and made again under its name); one replaced is written where it now is', async () => {
    await refuse('before.test');
    rmSync(file());
    rmSync(olderOf(file()), { force: true });
    await refuse('after.test');
    expect(t.log().map((e) => e.host)).toEqual(['after.test']);
    writeFileSync(`${file()}.new`, '');
    renameSync(`${file()}.new`, file());
    await refuse('replaced.test');
    expect(t.log().map((e) => e.host)).toEqual(['replaced.test']);
  });

  it('its folder removed is made again', async () => {
    rmSync(join(t.dir, 'network', 'logs'), { recursive: true, force: true });
    await refuse('again.test');
    expect(t.log().map((e) => e.host)).toEqual(['again.test']);
  });

  it('a log it cannot write is said, its path whole in any script (the pump’s lines are UTF-8)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pump-日誌-'));
    const said: string[] = [];
    const proxy = new EgressProxy({ policiesFile: policiesFile(dir), say: (m) => said.push(m) });
    const log = logFileOf(dir, 'sb');
    // A folder where the file should be: it cannot be opened for writing, not even by root.
    mkdirSync(log, { recursive: true });
    writePolicies(dir, { sb: { mode: 'allow', allow: [] } });
    try {
      await proxy.listen('sb', { socket: join(dir, 'p.sock'), log });
      expect(await answerOf(join(dir, 'p.sock'), 'CONNECT x.test:443 HTTP/1.1\r\n\r\n')).toMatch(/^HTTP\/1\.1 403/);
      await until(() => said.some((m) => m.includes('cannot write its log')), 'the pump says it cannot write the log');
      expect(said).toContainEqual(`egress pump: sandbox 1: cannot write its log ${log}: Is a directory`);
    } finally {
      await proxy.close();
      rmSync(dir, { recursive: true, force: true });
    }
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

/** Runs a python3 client (a process of its own: the lookup finds it) and returns what it printed. */
async function pythonClient(code: string, argv: string[] = []): Promise<{ pid: number; out: string }> {
  const client = spawn('python3', ['-c', code, ...argv], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  client.stdout.on('data', (d: Buffer) => (out += d.toString()));
  await new Promise((r) => client.on('exit', r));
  return { pid: client.pid!, out };
}

describe.runIf(hasPython())(
  'the relay passes its listening socket; the pump accepts the sandbox’s connections itself (the real relay script)',
  () => {
    const t = servedSandbox();
    let port: number;
    let relay: ChildProcess;
    const said: string[] = [];
    const proxy = new EgressProxy({ policiesFile: policiesFile(t.dir), say: (m) => said.push(m) });
    const at = (): { socket: string; relay: string; log: string } => ({
      socket: join(t.dir, 'proxy.sock'),
      relay: join(t.dir, 'relay.sock'),
      log: logFileOf(t.dir, 'sb'),
    });

    beforeAll(async () => {
      t.setPolicy({ mode: 'allow', allow: ['localhost', '127.0.0.1'] });
      await proxy.listen('sb', at());
      port = await freeLoopbackPort();
      relay = spawn('python3', ['-u', '-c', relayScript(port, t.dir)], { stdio: 'ignore' });
      await accepting(port);
    });
    afterAll(async () => {
      relay.kill('SIGCONT');
      relay.kill('SIGKILL');
      await proxy.close();
      await t.dispose();
    });

    it('a small exchange both ways, half-closed by the client', async () => {
      const down = payload(1000);
      const dest = await destination(down);
      try {
        const up = payload(77);
        expect(sha(await tunnel(port, dest.port, up))).toBe(sha(down));
        expect(sha(await dest.received)).toBe(sha(up));
        expect(t.linesTo(dest.port).map((e) => e.verdict)).toEqual(['allowed']);
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

    it('a connection’s line is on the log before its answer reaches the client (the first time and on a kept verdict)', async () => {
      const dest = await destination(payload(100));
      try {
        // The client reads the log as soon as its answer begins: its line is already there.
        const code = `import json,socket,sys
for _ in range(2):
    s=socket.create_connection(("127.0.0.1",${port})); s.sendall(b"CONNECT 127.0.0.1:${dest.port} HTTP/1.1\\r\\n\\r\\n"); s.recv(1)
    lines=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
    print(lines[-1]["port"], lines[-1]["pid"] if "pid" in lines[-1] else 0, flush=True); s.close()`;
        const { pid, out } = await pythonClient(code, [logFileOf(t.dir, 'sb')]);
        const expected = process.getuid?.() === 0 ? pid : 0;
        expect(out.trim().split('\n')).toEqual([`${dest.port} ${expected}`, `${dest.port} ${expected}`]);
      } finally {
        dest.close();
      }
    });

    it('a denied destination is refused on the sandbox’s own socket, its line on the log first', async () => {
      const answer = await answerOf(port, 'CONNECT example.org:443 HTTP/1.1\r\n\r\n');
      expect(answer).toMatch(/^HTTP\/1\.1 403 /);
      expect(answer).toContain('not on the allow list');
      expect(t.log().at(-1)).toMatchObject({ host: 'example.org', port: 443, verdict: 'denied' });
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
        const dest = await destination(payload(100));
        try {
          const { pid, out } = await pythonClient(
            `import socket,sys; s=socket.create_connection(("127.0.0.1",${port})); s.sendall(b"CONNECT localhost:${dest.port} HTTP/1.1\\r\\n\\r\\n"); s.shutdown(socket.SHUT_WR); sys.stdout.buffer.write(s.recv(100))`,
            // A long command line (an exec wrapper's script is kilobytes): read in part, shown cut short.
            ['marker-for-the-log', 'x'.repeat(5000)],
          );
          expect(out).toMatch(/^HTTP\/1\.1 200/);
          const line = t.linesTo(dest.port).at(-1);
          expect(line?.process).toMatch(new RegExp(`^python3 \\(pid ${pid}\\): \\S*python3 -c import socket.*…$`));
          // At most 120 characters of it: 119 and an ellipsis.
          expect(line?.process?.slice(line.process.indexOf('): ') + 3)).toHaveLength(120);
          expect(line?.pid).toBe(pid);
          expect(line?.ancestry?.[0]).toBe(process.pid);
        } finally {
          dest.close();
        }
      },
    );

    it.runIf(process.getuid?.() === 0)('a process name of any characters comes out as valid JSON on the log', async () => {
      const dest = await destination(payload(100));
      try {
        // The name is the process's own to choose (/proc/self/comm): a quote, a backslash, a tab, a newline.
        const { pid } = await pythonClient(
          `import socket; open("/proc/self/comm","w").write('q"\\\\\\t\\nz'); s=socket.create_connection(("127.0.0.1",${port})); s.sendall(b"CONNECT localhost:${dest.port} HTTP/1.1\\r\\n\\r\\n"); s.recv(100)`,
        );
        const line = t.linesTo(dest.port).at(-1);
        expect(line?.pid).toBe(pid);
        expect(line?.process?.startsWith(`q"\\\t\nz (pid ${pid}): `)).toBe(true);
        expect(line?.process).toContain('python3 -c import socket');
      } finally {
        dest.close();
      }
    });

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
      await proxy.listen('sb', at());
      await accepting(port);
      const answer = await answerOf(port, 'CONNECT example.org:443 HTTP/1.1\r\n\r\n');
      expect(answer).toMatch(/^HTTP\/1\.1 403 /);
    });
  },
);
