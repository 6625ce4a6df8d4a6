/**
 * How fast a Tab press is: `sandbox-desk __complete` (and `--version`, `--help`) against the eager
 * baseline — a command that loads the whole core (`sandbox list --json` on an empty data directory) —
 * measured in the same run, as separate processes the way a shell runs them. The CLI loads the core
 * lazily (src/cli/main.ts), so completion pays for the command tree only; `node -e 0` is listed too as
 * the floor no CLI can go under.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { measure, metric, percentile, type Metric } from './harness.js';

export const name = 'cli-complete';

const BIN = resolve(import.meta.dirname, '..', 'bin', 'sandbox-desk.js');

export default async function run(): Promise<Metric[]> {
  const home = mkdtempSync(join(tmpdir(), 'sdesk-bench-complete-'));
  try {
    const cli =
      (...args: string[]) =>
      () => {
        const r = spawnSync(process.execPath, [BIN, ...args], { env: { ...process.env, SANDBOX_DESK_HOME: home }, stdio: 'ignore' });
        if (r.status !== 0) throw new Error(`sandbox-desk ${args.join(' ')} exited ${r.status}`);
      };
    const opts = { warmup: 2, runs: 15 };
    const floor = await measure(() => spawnSync(process.execPath, ['-e', '0']), opts);
    const eager = await measure(cli('sandbox', 'list', '--json'), opts);
    const complete = await measure(cli('__complete', '--', 'sandbox', ''), opts);
    const version = await measure(cli('--version'), opts);
    const help = await measure(cli('--help'), opts);
    const p50 = (s: number[]) => percentile(s, 50);
    return [
      metric('complete-p50', 'ms', p50(complete), p50(eager)),
      metric('version-p50', 'ms', p50(version), p50(eager)),
      metric('help-p50', 'ms', p50(help), p50(eager)),
      metric('core-command-p50', 'ms', p50(eager)),
      metric('node-startup-p50', 'ms', p50(floor)),
    ];
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}
