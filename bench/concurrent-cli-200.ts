/**
 * 200 concurrent `sandbox-desk exec` CLI calls over 10 sessions (issue 34's benchmark), each
 * `pwd; cd /tmp/<own dir>`: calls on one session run one at a time, each starting where the previous one
 * ended, so per session the `pwd`s must form one chain — the start cwd once, then every call's own dir
 * but the last one's, each once. A `pwd` seen twice, or one that is no call's dir, is a wrong cwd.
 * Goals: 0 wrong cwds; each CLI process's peak RSS ≤ 60 MiB (a thin client, not a core: /usr/bin/time
 * -f %M); the service's RSS after a measured round within 10 % of before it (after a warm-up round).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { metric, percentile, uniqueName, withCliHome, type CliHome, type Metric } from './harness.js';

export const name = 'concurrent-cli-200';

const SESSIONS = 10;
const PER_SESSION = 20;
const CLI_RSS_GOAL_MIB = 60;
const SERVICE_GROWTH_GOAL = 0.1;

interface Call {
  session: number;
  index: number;
  dir: string;
  code: number | null;
  pwd: string;
  rssKiB: number;
  stderr: string;
}

/** One CLI exec under /usr/bin/time: its pwd output and its peak RSS. */
function oneCall(h: CliHome, sb: string, session: number, index: number, round: string): Promise<Call> {
  const dir = `/tmp/cc-${round}-${session}-${index}`;
  const child = spawn(
    '/usr/bin/time',
    [
      '-f',
      'SDESK_MAXRSS_KIB=%M',
      process.execPath,
      ...h.argv,
      'exec',
      sb,
      '--session',
      `s${session}`,
      '--',
      `pwd; mkdir -p ${dir} && cd ${dir}`,
    ],
    { env: h.env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      const m = /SDESK_MAXRSS_KIB=(\d+)/.exec(stderr);
      resolve({
        session,
        index,
        dir,
        code,
        pwd: stdout.trim(),
        rssKiB: m ? Number(m[1]) : NaN,
        stderr: stderr.replace(/SDESK_MAXRSS_KIB=\d+\n?/, ''),
      });
    });
  });
}

/** Wrong cwds of one round: per session, `pwd`s that break the chain (seen twice, or no call's dir nor the start). */
function wrongCwds(calls: readonly Call[], start: string): { wrong: number; failed: number; examples: string[] } {
  let wrong = 0;
  let failed = 0;
  const examples: string[] = [];
  for (let s = 0; s < SESSIONS; s++) {
    const mine = calls.filter((c) => c.session === s);
    const valid = new Set([start, ...mine.map((c) => c.dir)]);
    const seen = new Set<string>();
    for (const c of mine) {
      if (c.code !== 0) {
        failed++;
        if (examples.length < 5) examples.push(`s${s}#${c.index} exited ${c.code}: ${c.stderr.trim().slice(0, 200)}`);
        continue;
      }
      if (!valid.has(c.pwd) || seen.has(c.pwd) || c.pwd === c.dir) {
        wrong++;
        if (examples.length < 5) examples.push(`s${s}#${c.index} started in ${JSON.stringify(c.pwd)}`);
      }
      seen.add(c.pwd);
    }
  }
  return { wrong, failed, examples };
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) / 1024;
}

export default async function run(): Promise<Metric[]> {
  return withCliHome(async (h) => {
    const sb = uniqueName('cc200');
    h.made.push(sb);
    h.cli('sandbox', 'create', sb, '--backend', 'docker');
    for (let s = 0; s < SESSIONS; s++) h.cli('exec', sb, '--session', `s${s}`, '--', 'cd /tmp');
    const pid = h.servicePid();

    const round = async (tag: string) => {
      // Every session starts the round in /tmp again (one call each, before the burst).
      for (let s = 0; s < SESSIONS; s++) h.cli('exec', sb, '--session', `s${s}`, '--', 'cd /tmp');
      const t0 = performance.now();
      const calls = await Promise.all(
        Array.from({ length: SESSIONS * PER_SESSION }, (_, i) => oneCall(h, sb, i % SESSIONS, Math.floor(i / SESSIONS), tag)),
      );
      const seconds = (performance.now() - t0) / 1000;
      const check = wrongCwds(calls, '/tmp');
      const rss = calls.map((c) => c.rssKiB / 1024).sort((a, b) => a - b);
      console.log(
        `${name} ${tag}: ${calls.length} calls in ${seconds.toFixed(1)} s; wrong cwds ${check.wrong}, failed ${check.failed}; CLI peak RSS p50 ${percentile(rss, 50).toFixed(1)} MiB, max ${rss.at(-1)!.toFixed(1)} MiB${check.examples.length ? `; e.g. ${check.examples.join(' | ')}` : ''}`,
      );
      return { calls, seconds, rss, ...check };
    };

    const settle = () => new Promise((r) => setTimeout(r, 3000));
    const warm = await round('warm');
    await settle();
    const before = rssMiB(pid);
    const measured = await round('measured');
    await settle();
    const after = rssMiB(pid);
    if (h.servicePid() !== pid) throw new Error('the service was replaced during the benchmark');
    const growth = (after - before) / before;
    console.log(
      `${name}: service RSS ${before.toFixed(1)} → ${after.toFixed(1)} MiB (${(growth * 100).toFixed(1)} %, goal ≤ ${SERVICE_GROWTH_GOAL * 100} %); ` +
        `CLI peak RSS max ${measured.rss.at(-1)!.toFixed(1)} MiB (goal ≤ ${CLI_RSS_GOAL_MIB}); wrong cwds ${warm.wrong + measured.wrong} (goal 0)`,
    );
    const maxRss = Math.max(warm.rss.at(-1)!, measured.rss.at(-1)!);
    return [
      {
        ...metric('wrong-cwds', 'count', warm.wrong + measured.wrong),
        note: `of ${2 * SESSIONS * PER_SESSION} calls in two rounds; goal 0`,
      },
      { ...metric('failed-calls', 'count', warm.failed + measured.failed), note: 'exit code not 0' },
      {
        ...metric('cli-peak-rss-max', 'MiB', maxRss, CLI_RSS_GOAL_MIB),
        note: `each CLI process, /usr/bin/time %M; baseline = the goal (≤ ${CLI_RSS_GOAL_MIB} MiB)`,
      },
      metric('cli-peak-rss-p50', 'MiB', percentile(measured.rss, 50)),
      metric('service-rss-before', 'MiB', before),
      metric('service-rss-after', 'MiB', after),
      { ...metric('service-rss-growth', '%', growth * 100), note: `after a warm-up round of 200; goal ≤ ${SERVICE_GROWTH_GOAL * 100} %` },
      { ...metric('round-wall', 's', measured.seconds), note: `${SESSIONS * PER_SESSION} concurrent CLI execs` },
    ];
  });
}
