/**
 * One sandbox must not make every sandbox's requests slow through the pump's process lookup (issue 35,
 * item 10: 300 processes with 4,000 descriptors each made every request take 8–12 s). Sandbox `a` here
 * holds HOG_PROCS processes with HOG_FDS descriptors each and keeps connecting from processes in their
 * midst (each lookup of those is a scan of tens of thousands of descriptors); meanwhile sandbox `b`
 * makes a few requests. Each of b's must be answered quickly and its line on b's log must name b's process; a's
 * own requests are answered too (the connection goes on whether or not its process is known).
 *
 * Real parts: two containers of the test's own, the real relay script in each, the proxy and pump of
 * this test. Requests are denied (no allow entry): the lookup and the log line are the same for a
 * denial, and no destination is needed.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressProxy } from '../../src/sandbox/network/egress-proxy.js';
import { logFileOf, policiesFile, readLog, writePolicies } from '../../src/sandbox/network/network-files.js';
import { relayScript } from '../../src/sandbox/docker/egress-relay-script.js';
import { docker } from '../integration/network/test-servers.js';

const HOG_PROCS = 100;
const HOG_FDS = 1000;
/** b's request, answered: the pump's bound on waiting for a lookup is 100 ms; the rest is Node's decision. */
const QUICK_MS = 400;

/** A request through the sandbox's proxy address; prints "<its pid> <ms to the answer> <status line>". */
const request = (host: string): string => `import os, socket, time
t = time.monotonic()
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"GET http://${host}/ HTTP/1.1\\r\\nHost: ${host}\\r\\n\\r\\n")
a = b""
while b"\\r\\n" not in a:
    k = s.recv(4096)
    if not k: break
    a += k
print(os.getpid(), round((time.monotonic() - t) * 1000), a.split(b"\\r\\n")[0].decode())`;

/**
 * HOG_PROCS processes holding HOG_FDS descriptors each, and among them (half older, half newer: a scan
 * in either order meets half the descriptors first) 8 clients each making requests in a loop, so that
 * a connection's holder is rarely the last one's (the lookup's cache) and each lookup is a scan.
 */
const HOG = `import os, socket, time
fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(${HOG_FDS})]
def hold():
    if os.fork() == 0:
        time.sleep(600); os._exit(0)
def client():
    if os.fork() == 0:
        while True:
            try:
                s = socket.create_connection(("127.0.0.1", 3128)); s.sendall(b"GET http://a-hog.test/ HTTP/1.1\\r\\nHost: a-hog.test\\r\\n\\r\\n")
                s.recv(4096); s.close()
            except OSError: time.sleep(0.05)
for _ in range(${HOG_PROCS / 2}): hold()
for _ in range(8): client()
for _ in range(${HOG_PROCS / 2 - 1}): hold()
time.sleep(600)`;

/** Asynchronous: the proxy deciding the requests is this process's (a synchronous exec would stall it). */
async function execIn(name: string, ...args: string[]): Promise<string> {
  return (await promisify(execFile)('docker', ['exec', name, ...args], { encoding: 'utf8' })).stdout.trim();
}

async function until<T>(f: () => Promise<T | undefined> | T | undefined, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.runIf(process.getuid?.() === 0)('a sandbox whose lookups are slow does not slow another’s requests (issue 35, item 10)', () => {
  const tag = randomBytes(3).toString('hex');
  const dir = mkdtempSync(join(tmpdir(), 'sdslow-'));
  const proxy = new EgressProxy({ policiesFile: policiesFile(dir) });
  const names = { a: `sdslow-a-${tag}`, b: `sdslow-b-${tag}` };

  beforeAll(async () => {
    chmodSync(dir, 0o755);
    writePolicies(dir, { a: { mode: 'allow', allow: [] }, b: { mode: 'allow', allow: [] } });
    for (const s of ['a', 'b'] as const) {
      const at = join(dir, s);
      mkdirSync(at, { mode: 0o755 });
      await proxy.listen(s, { socket: join(at, 'proxy.sock'), relay: join(at, 'relay.sock'), log: logFileOf(dir, s) });
      docker(
        'run',
        '-d',
        '--name',
        names[s],
        '--label',
        'io.sandbox-desk.test=pump-slow-lookup',
        '-v',
        `${at}:/run/egress`,
        'sandbox-desk/base:latest',
        'sleep',
        '600',
      );
      docker('exec', '-d', names[s], 'python3', '-u', '-c', relayScript(3128, '/run/egress'));
    }
    // Both relays linked (their listeners are the pump's), and a's hog in place and asking.
    for (const s of ['a', 'b'] as const)
      await until(() =>
        execIn(names[s], 'python3', '-c', 'import socket; socket.create_connection(("127.0.0.1", 3128)).close()').then(
          () => true,
          () => undefined,
        ),
      );
    docker('exec', '-d', names.a, 'python3', '-c', HOG);
    await until(() => (readLog(dir, 'a').length >= 8 ? true : undefined));
  });
  afterAll(async () => {
    await proxy.close();
    docker('rm', '-f', names.a, names.b);
    rmSync(dir, { recursive: true, force: true });
  });

  /** `n` requests one after the other from new processes in sandbox `s`, each as it was answered. */
  async function requests(s: 'a' | 'b', host: string, n: number): Promise<Array<{ pid: number; ms: number; status: string }>> {
    const out = [];
    for (let i = 0; i < n; i++) {
      const [pid, ms, ...status] = (await execIn(names[s], 'python3', '-c', request(host))).split(' ');
      out.push({ pid: Number(pid), ms: Number(ms), status: status.join(' ') });
    }
    return out;
  }

  it('b’s requests are answered quickly, each on b’s log with b’s process, while a keeps the lookup busy', async () => {
    const answers = await requests('b', 'b-quick.test', 5);
    for (const a of answers) {
      expect(a.status).toMatch(/^HTTP\/1\.1 403/);
      expect(a.ms).toBeLessThan(QUICK_MS);
    }
    const lines = readLog(dir, 'b').filter((e) => e.host === 'b-quick.test');
    expect(lines.map((e) => e.pid)).toEqual(answers.map((a) => a.pid));
  });

  it('a’s own requests go on too: none is held for its lookup beyond the bound', async () => {
    for (const a of await requests('a', 'a-quick.test', 3)) {
      expect(a.status).toMatch(/^HTTP\/1\.1 403/);
      expect(a.ms).toBeLessThan(QUICK_MS);
    }
    expect(readLog(dir, 'a').filter((e) => e.host === 'a-quick.test')).toHaveLength(3);
  });
});
