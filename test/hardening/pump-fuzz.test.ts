/**
 * The standing fuzzer of the egress pump's parsers (issue 35): the request head, its Host, and the TLS
 * ClientHello a tunnel starts with — what a hostile sandbox writes to the proxy. Two halves:
 *  1. libFuzzer (clang, ASan + UBSan) on src/sandbox/network/pump/fuzz/fuzz-parse.c from the seed corpus
 *     kept beside it, for a fixed number of executions (bounded in time): no memory error, no undefined
 *     behaviour, no broken promise of the parsers (the target aborts on one), no input over 5 s;
 *  2. the same seed inputs through the real pump binary and proxy, served as a sandbox is, with every
 *     name resolving to the test's own servers on a loopback address of its own: no crash of the pump,
 *     no connection left hanging, and no bypass — `evil.test` (the mark of every attempt to reach another
 *     host than the allowed one) never reaches a server, and what a server gets has one Host, the allowed one.
 * Prints `pump fuzz: N cases, C crashes, H hangs, B bypasses`.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressProxy } from '../../src/sandbox/network/egress-proxy.js';
import { logFileOf, policiesFile, writePolicies } from '../../src/sandbox/network/network-files.js';

const PUMP = resolve(import.meta.dirname, '../../src/sandbox/network/pump');
const CORPUS = join(PUMP, 'fuzz', 'corpus');
/** Executions per run: ~5 s on this project's 2-core machines; max_total_time bounds it should one be slower. */
const RUNS = 200_000;
const MAX_SECONDS = 30;

const totals = { cases: 0, crashes: 0, hangs: 0, bypasses: 0 };
const findings: string[] = [];

function clang(): string {
  const cc = process.env.FUZZ_CC || 'clang';
  try {
    execFileSync(cc, ['--version'], { stdio: 'pipe' });
  } catch {
    throw new Error(`the pump fuzzer needs ${cc} with libFuzzer (clang, libclang-rt-14-dev): run \`npm run setup\``);
  }
  return cc;
}

describe('the pump’s parsers, fuzzed', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pump-fuzz-'));
  afterAll(() => {
    console.log(`pump fuzz: ${totals.cases} cases, ${totals.crashes} crashes, ${totals.hangs} hangs, ${totals.bypasses} bypasses`);
    for (const f of findings) console.log(`  ${f}`);
    rmSync(dir, { recursive: true, force: true });
  });

  it('libFuzzer with ASan and UBSan: a fixed number of executions from the seed corpus, nothing found', async () => {
    const cc = clang();
    const bin = join(dir, 'fuzz-parse');
    try {
      execFileSync(
        cc,
        [
          '-g',
          '-O1',
          '-fsanitize=fuzzer,address,undefined',
          '-fno-sanitize-recover=undefined',
          '-Wall',
          '-Wextra',
          '-Werror',
          '-o',
          bin,
        ].concat([join(PUMP, 'fuzz', 'fuzz-parse.c'), join(PUMP, 'http.c'), join(PUMP, 'util.c')]),
        { stdio: 'pipe' },
      );
    } catch (e) {
      const err = String((e as { stderr?: Buffer }).stderr ?? e);
      throw new Error(
        /fuzzer/.test(err) && /cannot find|not found|No such file/.test(err)
          ? `clang cannot link libFuzzer (libclang-rt-14-dev missing?): run \`npm run setup\`\n${err}`
          : `the fuzz target did not build:\n${err}`,
        { cause: e },
      );
    }
    // New inputs go to a folder of the run's own (the first corpus folder); the repo's seeds are only read.
    const found = join(dir, 'found');
    const artifacts = join(dir, 'artifacts');
    mkdirSync(found);
    mkdirSync(artifacts);
    const run = await promisify(execFile)(
      bin,
      [
        `-runs=${RUNS}`,
        `-max_total_time=${MAX_SECONDS}`,
        '-timeout=5',
        '-rss_limit_mb=1024',
        `-artifact_prefix=${artifacts}/`,
        found,
        CORPUS,
      ],
      { maxBuffer: 64 * 2 ** 20, timeout: (MAX_SECONDS + 30) * 1000 },
    ).then(
      (r) => ({ code: 0, text: r.stderr }),
      (e: { code?: number; stderr?: string }) => ({
        code: e.code ?? -1,
        text: e.stderr ?? `libFuzzer did not run (exit ${String(e.code)})`,
      }),
    );
    const done = /Done (\d+) runs/.exec(run.text);
    const runs = done
      ? Number(done[1])
      : Number(
          /#(\d+)\s/.exec(
            run.text
              .split('\n')
              .reverse()
              .find((l) => /^#\d+/.test(l)) ?? '',
          )?.[1] ?? 0,
        );
    const crashes = readdirSync(artifacts).filter((f) => !f.startsWith('timeout-'));
    const hangs = readdirSync(artifacts).filter((f) => f.startsWith('timeout-'));
    totals.cases += runs;
    totals.crashes += crashes.length + (run.code !== 0 && crashes.length + hangs.length === 0 ? 1 : 0);
    totals.hangs += hangs.length;
    for (const f of [...crashes, ...hangs])
      findings.push(`libFuzzer: ${f} (${readFileSync(join(artifacts, f)).toString('hex').slice(0, 200)})`);
    if (run.code !== 0)
      findings.push(
        `libFuzzer exited ${run.code}:\n${run.text
          .split('\n')
          .filter((l) => /ERROR|SUMMARY|runtime error|==\d+==/.test(l))
          .join('\n')}`,
      );
    expect(findings).toEqual([]);
    expect(runs).toBeGreaterThanOrEqual(Math.min(RUNS, 10_000));
  });

  describe('the seed corpus through the real pump', () => {
    /** A loopback address of the run's own: its ports 80 and 443 are the test's. */
    const addr = `127.${10 + Math.floor(Math.random() * 200)}.${Math.floor(Math.random() * 250)}.${2 + Math.floor(Math.random() * 250)}`;
    const received: Array<{ port: number; bytes: Buffer }> = [];
    const servers: net.Server[] = [];
    let proxy: EgressProxy;
    let sock: string;
    let pid: number | null;
    const said: string[] = [];

    beforeAll(async () => {
      for (const port of [80, 443]) {
        const server = net.createServer((s) => {
          const got: Buffer[] = [];
          const rec = { port, bytes: Buffer.alloc(0) };
          received.push(rec);
          s.on('data', (d: Buffer) => {
            got.push(d);
            rec.bytes = Buffer.concat(got);
            if (port === 80 && rec.bytes.includes('\r\n\r\n')) s.end('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n');
          });
          s.on('error', () => undefined);
        });
        await new Promise<void>((r, j) => (server.once('error', j), server.listen(port, addr, () => r())));
        servers.push(server);
      }
      const pdir = join(dir, 'proxy');
      mkdirSync(pdir);
      sock = join(pdir, 'p.sock');
      // Every name leads to the test's servers: were evil.test ever let through, a server would see it.
      proxy = new EgressProxy({ policiesFile: policiesFile(pdir), resolve: () => Promise.resolve([addr]), say: (m) => said.push(m) });
      writePolicies(pdir, { sb: { mode: 'allow', allow: ['allowed.test', `${addr}/32`] } });
      await proxy.listen('sb', { socket: sock, log: logFileOf(pdir, 'sb') });
      pid = proxy.pumpPid;
    });
    afterAll(async () => {
      for (const s of servers) s.close();
      await proxy?.close();
    });

    /** One input as a client sends it (then its end); resolves once the pump has closed it, or 'hang' after 5 s. */
    function send(bytes: Buffer): Promise<'closed' | 'hang'> {
      return new Promise((done) => {
        const c = net.connect({ path: sock, allowHalfOpen: true });
        const timer = setTimeout(() => (c.destroy(), done('hang')), 5000);
        c.on('data', () => undefined);
        c.on('error', () => undefined);
        c.on('close', () => (clearTimeout(timer), done('closed')));
        c.end(bytes);
      });
    }

    it('no crash, no hang, no bypass', async () => {
      const seeds = readdirSync(CORPUS).sort();
      expect(seeds.length).toBeGreaterThan(30);
      // The allowed inputs must get through, or "no bypass" would prove nothing.
      const reached: string[] = [];
      for (const name of seeds) {
        const raw = readFileSync(join(CORPUS, name));
        // The head's :443 / :80 stay as written: the servers are on those ports of the run's own address.
        const before = received.length;
        const outcome = await send(raw);
        totals.cases++;
        if (outcome === 'hang') {
          totals.hangs++;
          findings.push(`real pump: ${name} left hanging`);
        }
        if (proxy.pumpPid !== pid || said.some((m) => m.includes('exited'))) {
          totals.crashes++;
          findings.push(`real pump: died on ${name}: ${said.join('; ')}`);
          break;
        }
        // Give a server the rest of a connection the pump passed on (it closed the client's first).
        await new Promise((r) => setTimeout(r, 20));
        if (received.slice(before).some((g) => g.bytes.length > 0)) reached.push(name);
        for (const got of received.slice(before)) {
          const text = got.bytes.toString('latin1');
          const head = got.port === 80 ? text.slice(0, text.indexOf('\r\n\r\n') + 1 || undefined) : '';
          const hosts = head.match(/^host:.*$/gim) ?? [];
          const wrongHost = got.port === 80 && (hosts.length !== 1 || hosts[0].trim().toLowerCase() !== 'host: allowed.test:80');
          if (/evil/i.test(text) || wrongHost) {
            totals.bypasses++;
            findings.push(`real pump: ${name} reached port ${got.port} with ${JSON.stringify(text.slice(0, 200))}`);
          }
        }
      }
      expect(findings).toEqual([]);
      const allowed = seeds.filter((n) =>
        /^(hello-ok|get-absolute|get-no-host|get-http10|get-fragment|get-query-only|post-body|connect-plain-tcp)/.test(n),
      );
      expect(allowed.length).toBeGreaterThan(8);
      expect(reached.filter((n) => allowed.includes(n))).toEqual(allowed);
    });
  });
});
