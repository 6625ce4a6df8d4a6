/**
 * The CLI as a user runs it (issue 34): `sandbox-desk exec NAME -- true` called by name from the PATH
 * (setup links it there) against raw `docker exec NAME true`, interleaved in one run so both see the
 * same machine load — goal: ratio ≥ 1.0, the CLI at least as fast as docker exec. And whether a
 * session keeps its shell across CLI calls: `export X=…` in one call, `echo $X` in the next.
 *
 * The floor: `node -e 0` (bare Node start-up) is timed in the same rounds, since the CLI is a Node
 * program — when Node's own start-up exceeds `docker exec` here, ratio ≥ 1 is out of reach for any
 * Node CLI, and the figures show it. And the service's share: the same `exec … true` request sent to
 * the service's socket from this (already running) process, also in the same rounds. What the CLI
 * costs beyond those two is its own: loading its code, the connection, printing, exiting.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { clientServicePaths } from '../src/client/connect.js';
import { socketRequest } from '../src/client/socket-request.js';
import { CLIENT_VERSION_HEADER, clientVersionTag, ownVersion } from '../src/shared/service-info.js';
import { dockerSandbox, metric, percentile, withTempDesk, type Metric } from './harness.js';

export const name = 'cli-exec';

const GOAL_RATIO = 1.0;
const RUNS = 20;

/** `sandbox-desk` as the README says to call it: by name from the PATH; the checkout's bin when setup has not linked it. */
function cliCommand(): { argv0: string; pre: string[]; how: string } {
  const which = spawnSync('sh', ['-c', 'command -v sandbox-desk'], { encoding: 'utf8' });
  const found = which.status === 0 ? which.stdout.trim() : '';
  if (found) return { argv0: found, pre: [], how: `sandbox-desk from the PATH (${found})` };
  const bin = resolve(import.meta.dirname, '..', 'bin', 'sandbox-desk.js');
  return { argv0: process.execPath, pre: [bin], how: `node ${bin} (sandbox-desk is not on the PATH: run npm run setup)` };
}

function timed(argv0: string, args: string[], env: NodeJS.ProcessEnv): { ms: number; stdout: string; status: number | null } {
  const t0 = performance.now();
  const r = spawnSync(argv0, args, { env, encoding: 'utf8' });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${argv0} ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return { ms, stdout: r.stdout, status: r.status };
}

export default async function run(): Promise<Metric[]> {
  return withTempDesk(async (desk) => {
    const { name: sb, containerId } = await dockerSandbox(desk);
    const cli = cliCommand();
    console.log(`cli-exec: ${cli.how}`);
    const env = { ...process.env, SANDBOX_DESK_HOME: desk.store.dataDir };
    const viaCli = (...args: string[]) => timed(cli.argv0, [...cli.pre, ...args], env);
    const viaDocker = () => timed('docker', ['exec', containerId, 'true'], process.env);

    // Interleaved: one of each per round, so a burst of load lands on both.
    const viaNode = () => timed(process.execPath, ['-e', '0'], process.env);
    // The service's share: the CLI's one request, from here (the first CLI call started the service).
    const { socketPath } = clientServicePaths({ env });
    const execRequest = {
      socketPath,
      method: 'POST',
      path: '/api/call/exec',
      headers: { 'Content-Type': 'application/json', [CLIENT_VERSION_HEADER]: clientVersionTag(ownVersion()) },
      body: Buffer.from(JSON.stringify({ sandbox: sb, command: 'true', mode: 'shell' })),
    };
    const viaSocket = async (): Promise<number> => {
      const t0 = performance.now();
      const res = await socketRequest(execRequest);
      const ms = performance.now() - t0;
      if (res.status !== 200) throw new Error(`the service answered ${res.status}: ${res.body.toString('utf8')}`);
      return ms;
    };
    viaCli('exec', sb, '--', 'true');
    viaDocker();
    await viaSocket();
    const cliMs: number[] = [];
    const dockerMs: number[] = [];
    const nodeMs: number[] = [];
    const serviceMs: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      cliMs.push(viaCli('exec', sb, '--', 'true').ms);
      dockerMs.push(viaDocker().ms);
      nodeMs.push(viaNode().ms);
      serviceMs.push(await viaSocket());
    }
    for (const s of [cliMs, dockerMs, nodeMs, serviceMs]) s.sort((a, b) => a - b);
    const p50 = (s: number[]) => percentile(s, 50);
    const exec = metric('cli-exec-true-p50', 'ms', p50(cliMs), p50(dockerMs));
    console.log(
      `goal: sandbox-desk exec at least as fast as docker exec (ratio ≥ ${GOAL_RATIO}) — ${(exec.ratio ?? 0) >= GOAL_RATIO ? 'MET' : 'NOT MET'} (${(exec.ratio ?? 0).toFixed(2)})`,
    );

    // The environment across two CLI calls of one session: kept only when the session's shell outlives the call.
    const value = `v${process.pid}`;
    viaCli('exec', sb, '--session', 'bench-env', '--', `export SDESK_BENCH_X=${value}`);
    const echoed = viaCli('exec', sb, '--session', 'bench-env', '--', 'echo "${SDESK_BENCH_X:-unset}"').stdout.trim();
    const kept = echoed === value;
    console.log(`cli-exec-env: export in one CLI call, echo in the next — ${kept ? 'KEPT' : `LOST (the next call saw ${echoed})`}`);

    console.log(
      `p50: sandbox-desk exec ${p50(cliMs).toFixed(0)} ms, docker exec ${p50(dockerMs).toFixed(0)} ms, node -e 0 ${p50(nodeMs).toFixed(0)} ms (the floor of any Node CLI), the service's answer ${p50(serviceMs).toFixed(0)} ms — the CLI's own ${(p50(cliMs) - p50(nodeMs) - p50(serviceMs)).toFixed(0)} ms`,
    );
    return [
      exec,
      metric('docker-exec-true-p50', 'ms', p50(dockerMs)),
      metric('node-e-0-p50', 'ms', p50(nodeMs)),
      metric('service-exec-true-p50', 'ms', p50(serviceMs)),
      metric('cli-exec-env-kept', 'count', kept ? 1 : 0),
    ];
  });
}
