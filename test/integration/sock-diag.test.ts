/**
 * The exact socket lookup (src/sandbox/network/sock-diag.ts) against a real container: a process the
 * test starts inside it opens a TCP connection; the helper, entering the container's network
 * namespace, finds that socket's inode by its 4-tuple and the process holding it, and that process is
 * described by the pid the container sees (the lookup thread's fd walk agrees) — the path every `allow` connection's log line takes, without the
 * /proc/net/tcp walk.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeProcess, processOfSocket } from '../../src/sandbox/network/process-of-connection.js';
import { SockDiag } from '../../src/sandbox/network/sock-diag.js';
import { docker } from './network/test-servers.js';

/** Listens on 7000 and connects to itself; prints "<its pid> <the client's source port>" to /tmp/conn. */
const CONNECT = `import os, socket, time
l = socket.socket(); l.bind(("127.0.0.1", 7000)); l.listen()
c = socket.create_connection(("127.0.0.1", 7000)); a, _ = l.accept()
open("/tmp/conn.part", "w").write("%d %d" % (os.getpid(), c.getsockname()[1])); os.rename("/tmp/conn.part", "/tmp/conn")
time.sleep(600)`;

describe.runIf(process.getuid?.() === 0)('the exact socket lookup in a container (real engine)', () => {
  const name = `sdsockdiag-${randomBytes(3).toString('hex')}`;
  const diag = new SockDiag();
  let initPid = 0;
  let pid = 0;
  let sport = 0;

  beforeAll(async () => {
    docker('run', '-d', '--name', name, '--label', 'io.sandbox-desk.test=sock-diag', 'sandbox-desk/base:latest', 'sleep', '600');
    initPid = Number(docker('inspect', '-f', '{{.State.Pid}}', name));
    docker('exec', '-d', name, 'python3', '-c', CONNECT);
    for (let i = 0; i < 100 && !sport; i++) {
      try {
        [pid, sport] = execFileSync('docker', ['exec', name, 'cat', '/tmp/conn'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
          .trim()
          .split(' ')
          .map(Number) as [number, number];
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  });
  afterAll(() => {
    diag.dispose();
    docker('rm', '-f', name);
  });

  it('finds the connecting process by its 4-tuple, in the container’s namespaces', async () => {
    expect(sport).toBeGreaterThan(0);
    const answer = await diag.inodeOf(initPid, { src: '127.0.0.1', sport, dst: '127.0.0.1', dport: 7000 });
    expect(answer).toMatchObject({ inode: expect.any(Number), holder: expect.any(Number) });
    const { inode, holder } = answer as { inode: number; holder: number };
    // The helper's holder and the lookup thread's walk agree, and describe the connecting process.
    for (const found of [describeProcess(initPid, holder), await processOfSocket(initPid, inode)]) {
      expect(found?.pid).toBe(pid);
      expect(found?.pid).not.toBe(1);
      expect(found?.process).toMatch(/^python3 \(pid \d+\): python3 -c import os, socket/);
    }
    // The same 4-tuple is not a socket of this machine's own namespace: the lookup really entered the container's.
    expect(await diag.inodeOf(process.pid, { src: '127.0.0.1', sport, dst: '127.0.0.1', dport: 7000 })).toBeNull();
  });
});
