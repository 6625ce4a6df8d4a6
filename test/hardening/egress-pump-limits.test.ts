/**
 * Issue 35 #9 and #11: the egress pump against a hostile sandbox, with the real pump binary, real
 * Unix sockets in and loopback servers out (nothing else on this machine is touched: each test has
 * its own data dir, sockets and destinations, and reads only the pump it started).
 *
 *  #9  one sandbox's flood of idle connections and half-sent heads must not starve another sandbox
 *      (the pump's descriptors are capped low here, as 20,000 connections would cap them) nor grow the
 *      pump's memory: the flood is refused past its sandbox's limits, and the proxy's log says which.
 *  #11 a policy change reaches connections already open: removing the entry a tunnel was allowed by,
 *      or switching the sandbox offline, closes it (a denied line on its log); a tunnel still allowed
 *      goes on.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NetworkPolicy } from '../../src/shared/network-policy.js';
import { EgressProxy } from '../../src/sandbox/network/egress-proxy.js';
import type { PumpLimits } from '../../src/sandbox/network/egress-pump.js';
import { logFileOf, policiesFile, readLog, writePolicies } from '../../src/sandbox/network/network-files.js';

/** A data dir, a proxy on it (its `say` lines kept), sandboxes served on Unix sockets of their own. */
function servedProxy(limits?: Partial<PumpLimits>) {
  const dir = mkdtempSync(join(tmpdir(), 'pump-limits-'));
  const says: string[] = [];
  const proxy = new EgressProxy({ policiesFile: policiesFile(dir), say: (m) => says.push(m), limits });
  const sock = (sb: string): string => join(dir, `${sb}.sock`);
  return {
    dir,
    proxy,
    says,
    sock,
    setPolicies: (p: Record<string, NetworkPolicy>): void => writePolicies(dir, p),
    listen: (sb: string) => proxy.listen(sb, { socket: sock(sb), log: logFileOf(dir, sb) }),
    linesTo: (sb: string, port: number) => readLog(dir, sb, 100_000).filter((e) => e.port === port),
    dispose: async () => {
      await proxy.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Until `check` holds, or fails with `what` after `ms`. */
async function until(what: string, check: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A loopback destination that sends `down` and closes. */
async function sender(down: Buffer): Promise<{ port: number; close(): void }> {
  const server = net.createServer((s) => {
    s.on('error', () => undefined);
    s.end(down);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { port: (server.address() as net.AddressInfo).port, close: () => server.close() };
}

/** A loopback destination that trickles a byte every 50 ms for as long as a connection stays open (a long download). */
async function trickler(): Promise<{ port: number; close(): void }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    const t = setInterval(() => s.write('.'), 50);
    s.on('error', () => undefined);
    s.on('close', () => (clearInterval(t), sockets.delete(s)));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

/** CONNECT `target` through `sock`; everything after the 200, once the destination has closed. */
function fetchThrough(sock: string, target: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const c = net.connect({ path: sock });
    let got = Buffer.alloc(0);
    c.on('data', (d: Buffer) => (got = Buffer.concat([got, d])));
    c.on('error', reject);
    c.on('close', () => {
      const end = got.indexOf('\r\n\r\n');
      if (!got.subarray(0, 12).toString().startsWith('HTTP/1.1 200') || end < 0)
        return reject(new Error(`not tunnelled: ${got.toString()}`));
      resolve(got.subarray(end + 4));
    });
    c.write(`CONNECT ${target} HTTP/1.1\r\n\r\n`);
  });
}

/** An open tunnel to `target` through `sock`: resolves once its destination's bytes flow; `closed` when the pump closes it. */
function openTunnel(sock: string, target: string): Promise<{ closed: Promise<number>; received: () => number; end(): void }> {
  return new Promise((resolve, reject) => {
    const c = net.connect({ path: sock });
    let got = Buffer.alloc(0);
    let open = false;
    let closedAt!: (t: number) => void;
    const closed = new Promise<number>((r) => (closedAt = r));
    c.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d]);
      const end = got.indexOf('\r\n\r\n');
      if (!open && end >= 0 && got.length > end + 4) {
        if (!got.subarray(0, 12).toString().startsWith('HTTP/1.1 200')) return reject(new Error(got.toString()));
        open = true;
        resolve({ closed, received: () => got.length, end: () => c.destroy() });
      }
    });
    c.on('error', () => undefined);
    c.on('close', () => {
      closedAt(Date.now());
      if (!open) reject(new Error(`closed before it was open: ${got.toString()}`));
    });
    c.write(`CONNECT ${target} HTTP/1.1\r\n\r\n`);
  });
}

function rssKiB(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]);
}

describe('one sandbox cannot starve another (issue 35 #9)', () => {
  const t = servedProxy();
  const flood: net.Socket[] = [];
  // The pump's descriptors, capped as a flood of 20,000 connections would cap them at their default.
  const FDS = 600;
  const HALF_HEADS = 500;
  const IDLE = 700;

  beforeAll(async () => {
    t.setPolicies({
      hog: { mode: 'allow', allow: ['localhost', '127.0.0.0/8'] },
      other: { mode: 'allow', allow: ['localhost', '127.0.0.0/8'] },
    });
    await t.listen('hog');
    await t.listen('other');
    execFileSync('prlimit', ['--pid', String(t.proxy.pumpPid), `--nofile=${FDS}:${FDS}`]);
  });
  afterAll(async () => {
    for (const s of flood) s.destroy();
    await t.dispose();
  });

  it('a flood of half-sent heads and idle connections is refused past its limits, said on the proxy’s log; the other sandbox’s request completes; the pump’s memory stays bounded', async () => {
    const pid = t.proxy.pumpPid!;
    const before = rssKiB(pid);
    // 64.5 KB of a head that never ends (its buffer grows past 64 KiB), then connections that send nothing at all.
    const half = Buffer.from(`CONNECT localhost:9 HTTP/1.1\r\nX-Pad: ${'a'.repeat(64_500)}\r\n`);
    let settled = 0;
    const open = (bytes: Buffer | null): void => {
      const s = net.connect({ path: t.sock('hog') });
      flood.push(s);
      let done = false;
      const settle = (): void => void (done || ((done = true), settled++));
      s.on('connect', () => {
        if (bytes) s.write(bytes, settle);
        else settle();
      });
      s.on('error', settle);
      s.on('close', settle);
    };
    for (let i = 0; i < HALF_HEADS; i++) open(half);
    for (let i = 0; i < IDLE; i++) open(null);
    await until('the flood to be sent', () => settled === HALF_HEADS + IDLE, 20_000);
    await until('the refusal lines', () => t.says.some((m) => /refused \d+ new connection\(s\).*pending request heads/.test(m)));
    expect(
      t.says.some((m) =>
        /sandbox "hog": refused \d+ new connection\(s\): it holds its limit of \d+ (bytes of )?pending request heads/.test(m),
      ),
    ).toBe(true);
    expect(t.says.some((m) => /bytes of pending request heads/.test(m))).toBe(true);

    // The other sandbox is served while the flood holds everything its own limits let it hold.
    const down = Buffer.from('the other sandbox’s answer');
    const dest = await sender(down);
    try {
      const got = await Promise.race([
        fetchThrough(t.sock('other'), `localhost:${dest.port}`),
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error('the other sandbox’s request did not complete in 10 s')), 10_000),
        ),
      ]);
      expect(got.toString()).toBe(down.toString());
      expect(t.linesTo('other', dest.port).map((e) => e.verdict)).toEqual(['allowed']);
    } finally {
      dest.close();
    }
    // 500 half heads of 64.5 KB held would be ~36 MB; the limit per sandbox is 4 MiB of pending heads.
    const grown = rssKiB(pid) - before;
    expect(grown, `the pump grew by ${grown} KiB`).toBeLessThan(16 * 1024);
    expect(t.proxy.pumpPid).toBe(pid);
  });
});

describe('out of descriptors altogether, a waiting connection is refused, not left hanging (issue 35 #9)', () => {
  // Limits so high that only the descriptors run out (as all sandboxes together could make them).
  const t = servedProxy({ connections: 100_000, heads: 100_000, headBytes: 2 ** 30 });
  const flood: net.Socket[] = [];
  beforeAll(async () => {
    t.setPolicies({ sb: { mode: 'allow', allow: ['localhost'] } });
    await t.listen('sb');
    execFileSync('prlimit', ['--pid', String(t.proxy.pumpPid), '--nofile=64:64']);
  });
  afterAll(async () => {
    for (const s of flood) s.destroy();
    await t.dispose();
  });

  it('connections past the last descriptor are closed at once and the proxy’s log says so', async () => {
    let closed = 0;
    for (let i = 0; i < 120; i++) {
      const s = net.connect({ path: t.sock('sb') });
      flood.push(s);
      s.on('error', () => undefined);
      s.on('close', () => closed++);
    }
    await until('the out-of-descriptors line', () => t.says.some((m) => /out of file descriptors: refused \d+ connection/.test(m)));
    // Closed by the pump (each side's idle connection would otherwise wait out the 60 s head timeout).
    await until('the refused connections to be closed', () => closed >= 40);
    expect(t.proxy.pumpPid).not.toBeNull();
  });
});

describe('a policy change closes the connections it no longer allows (issue 35 #11)', () => {
  const t = servedProxy();
  const dests: Array<{ close(): void }> = [];
  // A name entry and a CIDR entry: removing the name leaves the raw-address tunnel allowed.
  const allow = ['localhost', '127.0.0.1/32'];

  beforeAll(async () => {
    t.setPolicies({ sb: { mode: 'allow', allow } });
    await t.listen('sb');
  });
  afterAll(async () => {
    for (const d of dests) d.close();
    await t.dispose();
  });

  const trickle = async (): Promise<number> => {
    const d = await trickler();
    dests.push(d);
    return d.port;
  };

  it('removing the entry a tunnel was allowed by closes it, with a denied line; a tunnel still allowed goes on; offline closes that one too', async () => {
    const byName = await trickle();
    const byAddress = await trickle();
    const named = await openTunnel(t.sock('sb'), `localhost:${byName}`);
    const raw = await openTunnel(t.sock('sb'), `127.0.0.1:${byAddress}`);

    const removedAt = Date.now();
    t.setPolicies({ sb: { mode: 'allow', allow: ['127.0.0.1/32'] } });
    const cutAt = await Promise.race([named.closed, new Promise<number>((r) => setTimeout(() => r(-1), 5_000))]);
    expect(cutAt, 'the tunnel by name was not closed within 5 s of its entry’s removal').toBeGreaterThan(0);
    expect(cutAt - removedAt).toBeLessThan(2_500);
    expect(t.linesTo('sb', byName).map((e) => [e.verdict, e.reason])).toEqual([
      ['allowed', null],
      ['denied', 'open connection closed: not on the allow list'],
    ]);
    expect(t.says.some((m) => /^sb: closed 1 open connection\(s\) its policy no longer allows/.test(m))).toBe(true);

    // The tunnel to the address a CIDR still allows goes on: its bytes keep coming.
    const had = raw.received();
    await until('the allowed tunnel’s bytes', () => raw.received() > had + 3, 3_000);
    expect(t.linesTo('sb', byAddress).map((e) => e.verdict)).toEqual(['allowed']);

    const offlineAt = Date.now();
    t.setPolicies({ sb: { mode: 'offline', allow: ['127.0.0.1/32'] } });
    const rawCut = await Promise.race([raw.closed, new Promise<number>((r) => setTimeout(() => r(-1), 5_000))]);
    expect(rawCut, 'the tunnel was not closed within 5 s of offline').toBeGreaterThan(0);
    expect(rawCut - offlineAt).toBeLessThan(2_500);
    expect(t.linesTo('sb', byAddress).map((e) => [e.verdict, e.reason])).toEqual([
      ['allowed', null],
      ['denied', 'open connection closed: the sandbox is offline'],
    ]);
  });

  it('a name’s tunnel to a host-local address is closed when the CIDR entry that allowed the address is removed (issues 35 #8, #11)', async () => {
    t.setPolicies({ sb: { mode: 'allow', allow } });
    const port = await trickle();
    const tun = await openTunnel(t.sock('sb'), `localhost:${port}`);
    // The name is still on the list; the address it reached (loopback) no longer is.
    t.setPolicies({ sb: { mode: 'allow', allow: ['localhost'] } });
    const at = await Promise.race([tun.closed, new Promise<number>((r) => setTimeout(() => r(-1), 5_000))]);
    expect(at, 'the tunnel to 127.0.0.1 outlived the CIDR entry that allowed it').toBeGreaterThan(0);
    expect(t.linesTo('sb', port).map((e) => [e.verdict, e.reason])).toEqual([
      ['allowed', null],
      ['denied', 'open connection closed: 127.0.0.1 is loopback and no CIDR entry covers it any more'],
    ]);
  });

  it('a sandbox no longer served (the daemon’s way for offline and removal) has its open tunnels closed, each logged with why', async () => {
    t.setPolicies({ sb: { mode: 'allow', allow } });
    const port = await trickle();
    const tun = await openTunnel(t.sock('sb'), `localhost:${port}`);
    await t.proxy.unlisten('sb', 'the sandbox was removed');
    const at = await Promise.race([tun.closed, new Promise<number>((r) => setTimeout(() => r(-1), 5_000))]);
    expect(at, 'the tunnel outlived its sandbox’s serving').toBeGreaterThan(0);
    await until('its line', () => t.linesTo('sb', port).length === 2, 2_000);
    expect(t.linesTo('sb', port).map((e) => [e.verdict, e.reason])).toEqual([
      ['allowed', null],
      ['denied', 'open connection closed: the sandbox was removed'],
    ]);
    // The pump says it on its own pipe, which may be read after the log line above was: waited for, not raced.
    await until('the proxy to say it', () =>
      t.says.some((m) => /sandbox "sb": closed 1 open connection\(s\): the sandbox was removed/.test(m)),
    );
  });
});
