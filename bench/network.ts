/**
 * The egress proxy's cost (issue 17): the same requests from a sandbox with `allow` (through the relay
 * and the host-side proxy) and from one with `open` (straight over the bridge), in the same run, to a
 * test server in its own container. `allowed-request-ms`: one small GET, the mean of a loop timed
 * inside the sandbox (so exec overhead is not in it); `throughput-mib-s`: a 100 MiB download. Each is
 * the median of ROUNDS rounds, open and allow alternating.
 * Goals: ratio ≥ 0.8 for small requests, ≥ 0.7 for throughput.
 *
 * The loop is bash's (a `cat` and a `wc` per request), as an agent's command-line tool would be: its
 * process start-ups are part of the baseline, and on a machine where a fork is slow they hide what the
 * proxy costs. So `lean-request-ms` asks the same of a client that starts no process per request
 * (python3, one connection per request, in the same sandboxes): the proxy's own cost per connection,
 * undiluted (no goal in the issue; reported beside it).
 *
 * `bare-forwarder-request-ms` puts the first figure in proportion: the same loop, run on this machine,
 * to the same server directly and through a forwarder with nothing but the forwarding (node:net, no
 * policy, log or process lookup; on loopback, for the length of the run). Its ratio is what any proxy
 * written on Node costs here per connection: the floor the egress proxy's own ratio is measured against.
 * `compiled-forwarder-request-ms` is the same forwarder in C (bench/reference/forwarder.c, compiled
 * with this machine's `cc` for the run; left out, and said so, where there is none): what a data path
 * outside Node would cost per connection.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { metric, uniqueName, withTempDesk, type Metric } from './harness.js';
import { startTestServers } from '../test/integration/network/test-servers.js';

export const name = 'network';

const REQUESTS = 100;
const ROUNDS = 7;
const LEAN_REQUESTS = 300;

/** A bash loop that GETs `host:port/path` N times (through $HTTP_PROXY when `proxied`), printing total ns and bytes. */
function loop(host: string, path: string, n: number, proxied: boolean): string {
  const target = proxied ? `"$ph" "$pp"` : `${host} 8000`;
  const reqPath = proxied ? `http://${host}:8000${path}` : path;
  return `p=\${HTTP_PROXY#http://}; p=\${p%/}; ph=\${p%:*}; pp=\${p##*:}
t0=$(date +%s%N); bytes=0
for i in $(seq ${n}); do
  exec 3<>/dev/tcp/$(printf '%s/%s' ${target}) || exit 7
  printf 'GET ${reqPath} HTTP/1.1\\r\\nHost: ${host}:8000\\r\\nConnection: close\\r\\n\\r\\n' >&3
  b=$(cat <&3 | wc -c); bytes=$((bytes + b)); exec 3>&-
done
echo $(( $(date +%s%N) - t0 )) $bytes`;
}

/** The lean client (see the top): N requests from python3, one connection each, through $HTTP_PROXY when `proxied`; prints total ns and bytes. */
function leanLoop(host: string, n: number, proxied: boolean): string {
  const script = [
    'import os, socket, sys, time',
    `proxied = ${proxied ? 'True' : 'False'}`,
    'p = os.environ.get("HTTP_PROXY", "")[len("http://"):].rstrip("/")',
    `to = (p.rsplit(":", 1)[0], int(p.rsplit(":", 1)[1])) if proxied else ("${host}", 8000)`,
    `req = ("GET %s HTTP/1.1\\r\\nHost: ${host}:8000\\r\\nConnection: close\\r\\n\\r\\n" % ("http://${host}:8000/" if proxied else "/")).encode()`,
    't0 = time.monotonic_ns(); total = 0',
    `for _ in range(${n}):`,
    '    s = socket.create_connection(to); s.sendall(req)',
    '    while True:',
    '        d = s.recv(65536)',
    '        if not d: break',
    '        total += len(d)',
    '    s.close()',
    'print(time.monotonic_ns() - t0, total)',
  ].join('\n');
  return `python3 -c '${script}'`;
}

/** The bare forwarder (see the top): one absolute-form request per connection, sent on in origin form, bytes piped back. */
async function bareForwarder(): Promise<{ port: number; close: () => void }> {
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    client.on('error', () => undefined);
    client.once('data', (head: Buffer) => {
      client.pause();
      const text = head.toString('latin1');
      const m = /^(\S+) http:\/\/([^/:\s]+):(\d+)(\S*) /.exec(text);
      if (!m) return void client.destroy();
      const upstream = net.connect({ host: m[2]!, port: Number(m[3]), noDelay: true, allowHalfOpen: true }, () => {
        upstream.write(`${m[1]} ${m[4] || '/'} ${text.slice(m[0].length)}`, 'latin1');
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on('error', () => client.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as net.AddressInfo).port, close: () => server.close() };
}

/** The C forwarder (see the top), built for this run; or why not, where this machine cannot build or start it. */
async function compiledForwarder(): Promise<{ port: number; close: () => void } | { why: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'sdesk-bench-fwd-'));
  const source = join(dirname(fileURLToPath(import.meta.url)), 'reference', 'forwarder.c');
  const binary = join(dir, 'forwarder');
  try {
    execFileSync('cc', ['-O2', '-o', binary, source], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    return { why: `cc could not build ${source}: ${(e as Error).message.split('\n')[0]}` };
  }
  const child: ChildProcess = spawn(binary, [], { stdio: ['ignore', 'pipe', 'inherit'] });
  const close = (): void => {
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  };
  const line = await new Promise<string>((resolve) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', resolve);
    child.once('exit', () => resolve(''));
  });
  const port = Number(/^listening (\d+)$/.exec(line)?.[1]);
  if (!port) {
    close();
    return { why: 'the compiled forwarder did not start' };
  }
  return { port, close };
}

export default async function run(): Promise<Metric[]> {
  const srv = startTestServers();
  const bare = await bareForwarder();
  const compiled = await compiledForwarder();
  if ('why' in compiled) console.log(`compiled-forwarder-request-ms left out: ${compiled.why}`);
  try {
    // On this machine: straight to the server, and through a forwarder on `port` (HTTP_PROXY for the loop).
    const onHost = async (port: number | null): Promise<number> => {
      const env = port === null ? process.env : { ...process.env, HTTP_PROXY: `http://127.0.0.1:${port}` };
      const { stdout } = await promisify(execFile)('bash', ['-c', loop(srv.ip.a, '/', REQUESTS, port !== null)], { env });
      return Number(stdout.trim().split(' ')[0]) / 1e6;
    };
    const compiledPort = 'port' in compiled ? compiled.port : null;
    return await withTempDesk(async (desk) => {
      const open = uniqueName('netopen');
      const allow = uniqueName('netallow');
      await desk.createSandbox({ name: open, backend: 'docker' });
      await desk.createSandbox({ name: allow, backend: 'docker', network: 'allow', allow: [`${srv.ip.a}:8000`] });
      const time = async (
        sb: string,
        host: string,
        path: string,
        n: number,
        proxied: boolean,
        lean = false,
      ): Promise<{ ms: number; bytes: number }> => {
        const command = lean ? leanLoop(host, n, proxied) : loop(host, path, n, proxied);
        const r = await desk.exec({ sandbox: sb, command, timeoutSeconds: 600, mode: 'oneshot' });
        const [ns, bytes] = r.stdout.trim().split(' ').map(Number);
        if (r.exitCode !== 0 || !ns || !bytes) throw new Error(`the request loop failed in ${sb}: ${r.stdout} ${r.stderr}`);
        return { ms: ns / 1e6, bytes };
      };
      // Warm both paths once (the proxy's first connection, ARP, the relay's first thread).
      await time(open, srv.bridgeIp.a, '/', 3, false);
      await time(allow, srv.ip.a, '/', 3, true);
      await time(open, srv.bridgeIp.a, '/', 3, false, true);
      await time(allow, srv.ip.a, '/', 3, true, true);
      // Interleaved rounds, the median of each side: the machine's load drifts (2 shared cores), and
      // one open run followed by one allow run measured the drift as much as the proxy.
      const smallO: number[] = [];
      const smallA: number[] = [];
      const bigO: Array<{ ms: number; bytes: number }> = [];
      const bigA: Array<{ ms: number; bytes: number }> = [];
      const hostO: number[] = [];
      const hostF: number[] = [];
      const hostC: number[] = [];
      const leanO: number[] = [];
      const leanA: number[] = [];
      await onHost(null);
      await onHost(bare.port);
      if (compiledPort) await onHost(compiledPort);
      for (let round = 0; round < ROUNDS; round++) {
        hostO.push(await onHost(null));
        hostF.push(await onHost(bare.port));
        if (compiledPort) hostC.push(await onHost(compiledPort));
        smallO.push((await time(open, srv.bridgeIp.a, '/', REQUESTS, false)).ms);
        smallA.push((await time(allow, srv.ip.a, '/', REQUESTS, true)).ms);
        leanO.push((await time(open, srv.bridgeIp.a, '/', LEAN_REQUESTS, false, true)).ms);
        leanA.push((await time(allow, srv.ip.a, '/', LEAN_REQUESTS, true, true)).ms);
        bigO.push(await time(open, srv.bridgeIp.a, '/big', 1, false));
        bigA.push(await time(allow, srv.ip.a, '/big', 1, true));
      }
      const mid = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
      const midRun = (xs: Array<{ ms: number; bytes: number }>) => [...xs].sort((a, b) => a.ms - b.ms)[xs.length >> 1]!;
      const smallOpen = { ms: mid(smallO) };
      const smallAllow = { ms: mid(smallA) };
      const bigOpen = midRun(bigO);
      const bigAllow = midRun(bigA);
      console.log(
        `rounds (ms): small open ${smallO.map((x) => (x / REQUESTS).toFixed(2)).join(' ')} | small allow ${smallA.map((x) => (x / REQUESTS).toFixed(2)).join(' ')} | ` +
          `lean open ${leanO.map((x) => (x / LEAN_REQUESTS).toFixed(3)).join(' ')} | lean allow ${leanA.map((x) => (x / LEAN_REQUESTS).toFixed(3)).join(' ')} | ` +
          `100 MiB open ${bigO.map((x) => x.ms.toFixed(0)).join(' ')} | 100 MiB allow ${bigA.map((x) => x.ms.toFixed(0)).join(' ')} | ` +
          `on this machine direct ${hostO.map((x) => (x / REQUESTS).toFixed(2)).join(' ')} | bare forwarder ${hostF.map((x) => (x / REQUESTS).toFixed(2)).join(' ')}` +
          (compiledPort ? ` | compiled forwarder ${hostC.map((x) => (x / REQUESTS).toFixed(2)).join(' ')}` : ''),
      );
      if (bigOpen.bytes < 100 * 2 ** 20 || bigAllow.bytes < 100 * 2 ** 20) throw new Error('the 100 MiB download came back short');
      const mibs = (b: { ms: number; bytes: number }): number => b.bytes / 2 ** 20 / (b.ms / 1000);
      const metrics = [
        metric('allowed-request-ms', 'ms', smallAllow.ms / REQUESTS, smallOpen.ms / REQUESTS),
        metric('throughput-mib-s', 'MiB/s', mibs(bigAllow), mibs(bigOpen)),
        metric('bare-forwarder-request-ms', 'ms', mid(hostF) / REQUESTS, mid(hostO) / REQUESTS),
        ...(compiledPort ? [metric('compiled-forwarder-request-ms', 'ms', mid(hostC) / REQUESTS, mid(hostO) / REQUESTS)] : []),
        metric('lean-request-ms', 'ms', mid(leanA) / LEAN_REQUESTS, mid(leanO) / LEAN_REQUESTS),
      ];
      console.log(
        `goals: small requests ratio ≥ 0.8 — ${(metrics[0]!.ratio ?? 0) >= 0.8 ? 'MET' : 'NOT MET'} (${(metrics[0]!.ratio ?? 0).toFixed(2)}); ` +
          `throughput ratio ≥ 0.7 — ${(metrics[1]!.ratio ?? 0) >= 0.7 ? 'MET' : 'NOT MET'} (${(metrics[1]!.ratio ?? 0).toFixed(2)}); ` +
          `a bare Node forwarder on this machine: ${(metrics[2]!.ratio ?? 0).toFixed(2)}` +
          (compiledPort ? `, the same in C: ${(metrics[3]!.ratio ?? 0).toFixed(2)}` : '') +
          `; a client that starts no process per request: ${(mid(leanA) / LEAN_REQUESTS).toFixed(3)} vs ${(mid(leanO) / LEAN_REQUESTS).toFixed(3)} ms ` +
          `(the proxy adds ${((mid(leanA) - mid(leanO)) / LEAN_REQUESTS).toFixed(3)} ms a connection)`,
      );
      return metrics;
    });
  } finally {
    bare.close();
    if ('port' in compiled) compiled.close();
    srv.dispose();
  }
}
