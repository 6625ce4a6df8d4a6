/**
 * The sandbox lifecycle against raw Docker: creating a sandbox until its first command has run, and
 * the cost of one `true` through the persistent shell and one-shot, each against `docker run`/`docker exec`.
 */
import { check, docker, dockerSandbox, measure, median, metric, uniqueName, withTempDesk, type Metric } from './harness.js';
import { DEFAULT_DOCKER_IMAGE } from '../src/sandbox/docker/docker-provider.js';

export const name = 'sandbox';

const CREATE_RUNS = 5;
const EXEC_RUNS = 30;

export default async function run(): Promise<Metric[]> {
  return withTempDesk(async (desk) => {
    // Create + start + first exec; only that is timed, the removal after each run is not.
    const create: number[] = [];
    for (let i = 0; i < CREATE_RUNS; i++) {
      const sb = uniqueName();
      const t0 = performance.now();
      await desk.createSandbox({ name: sb, backend: 'docker' });
      check(await desk.exec({ sandbox: sb, command: 'true' }));
      create.push(performance.now() - t0);
      await desk.removeSandbox(sb, { force: true });
    }
    const dockerRun = await measure(() => docker(['run', '--rm', DEFAULT_DOCKER_IMAGE, 'true']), { runs: CREATE_RUNS });

    const { name: sb, containerId } = await dockerSandbox(desk);
    const shell = await measure(async () => check(await desk.exec({ sandbox: sb, command: 'true', session: 'bench' }), { shell: true }), {
      warmup: 3,
      runs: EXEC_RUNS,
    });
    const oneshot = await measure(async () => check(await desk.exec({ sandbox: sb, command: 'true', session: 'bench', mode: 'oneshot' })), {
      warmup: 3,
      runs: EXEC_RUNS,
    });
    const rawExec = await measure(() => docker(['exec', containerId, 'true']), { warmup: 3, runs: EXEC_RUNS });

    return [
      metric('create-start-first-exec-ms', 'ms', median(create.sort((a, b) => a - b)), median(dockerRun)),
      metric('exec-true-ms', 'ms', median(shell), median(rawExec)),
      metric('exec-oneshot-true-ms', 'ms', median(oneshot), median(rawExec)),
    ];
  });
}
