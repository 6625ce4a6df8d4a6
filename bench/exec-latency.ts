/**
 * Round-trip latency of one command: the persistent session shell and one-shot mode against a raw
 * `docker exec -i <id> bash -c CMD`, for a no-op and for a command that moves the cwd.
 */
import { check, docker, dockerSandbox, measure, metric, percentile, withTempDesk, type Metric } from './harness.js';

export const name = 'exec-latency';

/** The goal this benchmark tracks: persistent shell p50 at least this many times faster than raw docker exec. */
const GOAL_SPEEDUP = 30;

const COMMANDS = [
  { key: 'true', command: 'true', stdout: '' },
  { key: 'cd', command: 'cd /tmp && pwd', stdout: '/tmp' },
] as const;

export default async function run(): Promise<Metric[]> {
  const p50 = (s: number[]) => percentile(s, 50);
  const p95 = (s: number[]) => percentile(s, 95);
  return withTempDesk(async (desk) => {
    const { name: sb, containerId } = await dockerSandbox(desk);
    const r: Record<string, { shell: number[]; oneshot: number[]; raw: number[] }> = {};
    for (const { key, command, stdout } of COMMANDS) {
      r[key] = {
        shell: await measure(
          async () => check(await desk.exec({ sandbox: sb, command, session: 'latency', mode: 'shell' }), { stdout, shell: true }),
          { warmup: 5, runs: 100 },
        ),
        oneshot: await measure(
          async () => check(await desk.exec({ sandbox: sb, command, session: 'latency', mode: 'oneshot' }), { stdout }),
          { warmup: 2, runs: 30 },
        ),
        raw: await measure(() => docker(['exec', '-i', containerId, 'bash', '-c', command]), { warmup: 2, runs: 30 }),
      };
    }
    const t = r['true']!;
    const cd = r['cd']!;
    const metrics = [
      metric('persistent-shell-p50', 'ms', p50(t.shell), p50(t.raw)),
      metric('persistent-shell-p95', 'ms', p95(t.shell), p95(t.raw)),
      metric('oneshot-p50', 'ms', p50(t.oneshot), p50(t.raw)),
      metric('persistent-shell-cd-p50', 'ms', p50(cd.shell), p50(cd.raw)),
      metric('oneshot-cd-p50', 'ms', p50(cd.oneshot), p50(cd.raw)),
      metric('raw-docker-exec-p50', 'ms', p50(t.raw)),
    ];
    const speedup = metrics[0]!.ratio ?? 0;
    console.log(
      `goal: persistent shell p50 at least ${GOAL_SPEEDUP}× faster than raw docker exec — ${speedup >= GOAL_SPEEDUP ? 'MET' : 'NOT MET'} (${speedup.toFixed(1)}×)`,
    );
    return metrics;
  });
}
