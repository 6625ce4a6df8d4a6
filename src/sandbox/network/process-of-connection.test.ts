import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeProcess, nsPidOf, processOfPort, processOfSocket, socketInodeOf } from './process-of-connection.js';
import { ProcessLookupThread } from './process-lookup-thread.js';

// The worker thread's script is the built file (the proxy daemon runs from dist/; setup builds it).
const BUILT_WORKER = join(process.cwd(), 'dist/src/sandbox/network/process-lookup-worker.js');

/** Starts the thread and waits until it has loaded (before that, lookups run inline). */
async function loaded(t: ProcessLookupThread): Promise<void> {
  t.prepare();
  for (let i = 0; i < 200 && !t.onThread(); i++) await new Promise((r) => setTimeout(r, 25));
  expect(t.onThread()).toBe(true);
}

describe('the process behind a connection (real /proc, a connection this test opens)', () => {
  let server: net.Server;
  let client: net.Socket;
  let accepted: net.Socket | null = null;
  beforeAll(async () => {
    server = net.createServer((s) => (accepted = s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
    await new Promise((r) => client.once('connect', r));
  });
  afterAll(() => {
    client.destroy();
    accepted?.destroy();
    server.close();
  });

  it('maps the source port to this very process, with its ancestry', async () => {
    const p = await processOfPort(process.pid, client.localPort!, { remotePort: (server.address() as net.AddressInfo).port });
    expect(p).not.toBeNull();
    expect(p!.pid).toBe(process.pid);
    expect(p!.process).toContain(`(pid ${process.pid})`);
    expect(p!.ancestry[0]).toBe(process.ppid);
  });

  it('by inode (what sock-diag.ts finds): the same process; an inode nobody holds is not known', async () => {
    const inode = socketInodeOf(readFileSync('/proc/self/net/tcp', 'utf8'), client.localPort!, (server.address() as net.AddressInfo).port);
    expect(inode).not.toBeNull();
    const p = await processOfSocket(process.pid, Number(inode));
    expect(p?.pid).toBe(process.pid);
    expect(await processOfSocket(process.pid, 4_000_000_000)).toBeNull();
  });

  it('describes a process the helper found (by host pid): this one; a pid that does not exist is not known', () => {
    expect(describeProcess(process.pid, process.pid)).toMatchObject({ pid: process.pid });
    expect(describeProcess(process.pid, process.pid)!.ancestry[0]).toBe(process.ppid);
    expect(describeProcess(process.pid, 2 ** 22 + 7)).toBeNull();
  });

  it('a port nobody holds is not known (null), and so is a process that does not exist', async () => {
    const free = net.createServer();
    await new Promise<void>((r) => free.listen(0, '127.0.0.1', () => r()));
    const port = (free.address() as net.AddressInfo).port;
    await new Promise((r) => free.close(r));
    expect(await processOfPort(process.pid, port, { remotePort: 1 })).toBeNull();
    expect(await processOfPort(2 ** 22 + 7, client.localPort!)).toBeNull();
  });

  it.runIf(existsSync(BUILT_WORKER))('on the worker thread: the same answer, lookups answered each to its own', async () => {
    const t = new ProcessLookupThread(BUILT_WORKER);
    try {
      await loaded(t);
      const [found, none, byInode] = await Promise.all([
        t.of(process.pid, client.localPort!, { remotePort: (server.address() as net.AddressInfo).port }),
        t.of(2 ** 22 + 7, client.localPort!),
        t.ofSocket(process.pid, Number(socketInodeOf(readFileSync('/proc/self/net/tcp', 'utf8'), client.localPort!))),
      ]);
      expect(found?.pid).toBe(process.pid);
      expect(none).toBeNull();
      expect(byInode?.pid).toBe(process.pid);
    } finally {
      await t.dispose();
    }
  });

  it('on a worker thread from the .ts sources (registering tsx itself): the same answer', async () => {
    const t = new ProcessLookupThread(join(process.cwd(), 'src/sandbox/network/process-lookup-worker.ts'));
    try {
      await loaded(t);
      const inode = Number(socketInodeOf(readFileSync('/proc/self/net/tcp', 'utf8'), client.localPort!));
      expect((await t.ofSocket(process.pid, inode))?.pid).toBe(process.pid);
    } finally {
      await t.dispose();
    }
  });

  it('without the built worker the lookup runs inline and still answers', async () => {
    const t = new ProcessLookupThread('/nonexistent/process-lookup-worker.js');
    t.prepare();
    expect(t.onThread()).toBe(false);
    expect((await t.of(process.pid, client.localPort!, { remotePort: (server.address() as net.AddressInfo).port }))?.pid).toBe(process.pid);
    await t.dispose();
  });

  it('reads /proc/net/tcp lines and NSpid', () => {
    const tcp = [
      '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
      '   0: 00000000:0C38 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1',
      '   1: 0300A8C0:A2F4 0200A8C0:0C38 01 00000000:00000000 00:00000000 00000000  1000        0 222 1',
    ].join('\n');
    expect(socketInodeOf(tcp, 0xa2f4, 3128)).toBe('222');
    expect(socketInodeOf(tcp, 3128)).toBeNull();
    expect(socketInodeOf(tcp, 0xa2f4, 80)).toBeNull();
    expect(nsPidOf('Name:\tcurl\nNSpid:\t4242\t17\n')).toBe(17);
  });
});
