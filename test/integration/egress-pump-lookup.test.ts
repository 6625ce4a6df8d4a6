/**
 * The egress pump's process lookup (egress-pump.c) against a real container: the real relay script
 * runs in the container and passes its listener, so the pump learns the container's network namespace
 * from it (nothing asked of the engine); a process the test starts inside opens a TCP connection; the
 * pump finds that socket by its 4-tuple in the container's namespace, the process holding it among
 * the container's, and describes it as the container sees it — the path every `allow` connection's
 * log line takes.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressProxy } from '../../src/sandbox/network/egress-proxy.js';
import { logFileOf, policiesFile } from '../../src/sandbox/network/network-files.js';
import { relayScript } from '../../src/sandbox/docker/egress-relay-script.js';
import { docker } from './network/test-servers.js';

/** Listens on 7000 and connects to itself; prints "<its pid> <the client's source port>" to /tmp/conn. */
const CONNECT = `import os, socket, time
l = socket.socket(); l.bind(("127.0.0.1", 7000)); l.listen()
c = socket.create_connection(("127.0.0.1", 7000)); a, _ = l.accept()
open("/tmp/conn.part", "w").write("%d %d" % (os.getpid(), c.getsockname()[1])); os.rename("/tmp/conn.part", "/tmp/conn")
time.sleep(600)`;

describe.runIf(process.getuid?.() === 0)('the pump’s process lookup in a container (real engine, real relay)', () => {
  const name = `sdlookup-${randomBytes(3).toString('hex')}`;
  const dir = mkdtempSync(join(tmpdir(), 'sdlookup-'));
  const proxy = new EgressProxy({ policiesFile: policiesFile(dir) });
  let pid = 0;
  let sport = 0;

  beforeAll(async () => {
    chmodSync(dir, 0o755);
    await proxy.listen('sb', { socket: join(dir, 'proxy.sock'), relay: join(dir, 'relay.sock'), log: logFileOf(dir, 'sb') });
    docker(
      'run',
      '-d',
      '--name',
      name,
      '--label',
      'io.sandbox-desk.test=egress-pump-lookup',
      '-v',
      `${dir}:/run/egress`,
      'sandbox-desk/base:latest',
      'sleep',
      '600',
    );
    docker('exec', '-d', name, 'python3', '-u', '-c', relayScript(3128, '/run/egress'));
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
  afterAll(async () => {
    await proxy.close();
    docker('rm', '-f', name);
    rmSync(dir, { recursive: true, force: true });
  });

  it('finds the connecting process by its 4-tuple, in the container’s namespaces', async () => {
    expect(sport).toBeGreaterThan(0);
    // The relay linked: the pump knows the container's namespace from its listener.
    let found = null;
    for (let i = 0; i < 100 && !found; i++) {
      found = await proxy.processOf('sb', '127.0.0.1', sport, '127.0.0.1', 7000);
      if (!found) await new Promise((r) => setTimeout(r, 100));
    }
    expect(found).toMatchObject({
      pid,
      process: expect.stringMatching(new RegExp(`^python3 \\(pid ${pid}\\): python3 -c import os, socket`)),
    });
    expect(found?.pid).not.toBe(1);
    expect(found?.hostPid).not.toBe(pid);
    // Its parent is outside the container (docker exec's shim): no ancestry inside.
    expect(found?.ancestry).toEqual([]);
    // The other end of the same connection is the same process; a port nobody uses is nobody's.
    expect((await proxy.processOf('sb', '127.0.0.1', 7000, '127.0.0.1', sport))?.pid).toBe(pid);
    expect(await proxy.processOf('sb', '127.0.0.1', sport + 1, '127.0.0.1', 7000)).toBeNull();
  });
});
