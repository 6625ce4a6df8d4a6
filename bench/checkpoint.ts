/**
 * Checkpoints (issue 15), one section per backend so each backend's owner adds its own:
 *
 * - docker: `docker-checkpoint-ms` (our checkpoint: bookkeeping + docker commit) against a raw
 *   `docker commit` of the same container in the same run; `docker-restore-to-first-command-ms` (our
 *   restore until the session's first command answered) against `docker run -d` of the committed
 *   image + the first `docker exec`; `fork-3-ms` (three forks of one checkpoint until each answered a
 *   command) against three raw `docker run -d` + exec of the same image.
 * - qemu: vm-checkpoint-memory-ms and vm-restore-to-first-frame-ms belong to the QEMU checkpoints'
 *   owner: add a `qemuSection` below and list it in SECTIONS.
 */
import { check, docker, measure, median, metric, uniqueName, withTempDesk, type Metric } from './harness.js';
import type { SandboxDesk } from '../src/api/sandbox-desk.js';

export const name = 'checkpoint';

const RUNS = 3;

type Section = (desk: SandboxDesk) => Promise<Metric[]>;

async function dockerSection(desk: SandboxDesk): Promise<Metric[]> {
  const sb = uniqueName('ckb');
  const { sandbox } = await desk.createSandbox({ name: sb, backend: 'docker' });
  // Something to save: a project with a few MiB in it, and a session standing in it.
  check(
    await desk.exec({ sandbox: sb, session: 'agent', command: 'mkdir -p ~/project && cd ~/project && head -c 4M /dev/urandom > blob' }),
  );
  const rawImages: string[] = [];
  const ids: string[] = [];
  try {
    const ours = await measure(
      async () => {
        const r = await desk.checkpoints.checkpoint({ sandbox: sb });
        ids.push(r.checkpoint.id);
      },
      { runs: RUNS },
    );
    const raw = await measure(
      async () => {
        const tag = `sandbox-desk/checkpoint-bench:${uniqueName('raw')}`;
        await docker(['commit', '--pause=true', sandbox.backendRef!, tag]);
        rawImages.push(tag);
      },
      { runs: RUNS },
    );

    const id = ids[0]!;
    const restore = await measure(
      async () => {
        await desk.checkpoints.restore(sb, id);
        check(await desk.exec({ sandbox: sb, session: 'agent', command: 'true' }));
      },
      { runs: RUNS },
    );
    const image = `sandbox-desk/checkpoint:${id}`;
    const runAndExec = async () => {
      const c = await docker(['run', '-d', '--init', '--entrypoint', 'sleep', image, 'infinity']);
      await docker(['exec', c, 'true']);
      return c;
    };
    const rawContainers: string[] = [];
    const rawRestore = await measure(async () => rawContainers.push(await runAndExec()), { runs: RUNS });

    const fork3: number[] = [];
    const raw3: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const prefix = uniqueName('fk');
      const t0 = performance.now();
      const f = await desk.checkpoints.fork({ sandbox: sb, checkpoint: id, as: prefix, count: 3 });
      await Promise.all(f.sandboxes.map(async (s) => check(await desk.exec({ sandbox: s.name, session: 'agent', command: 'true' }))));
      fork3.push(performance.now() - t0);
      for (const s of f.sandboxes) await desk.removeSandbox(s.name, { force: true });
      const t1 = performance.now();
      rawContainers.push(...(await Promise.all([runAndExec(), runAndExec(), runAndExec()])));
      raw3.push(performance.now() - t1);
    }
    await docker(['rm', '-f', ...rawContainers]).catch(() => undefined);

    const sorted = (a: number[]) => a.sort((x, y) => x - y);
    return [
      metric('docker-checkpoint-ms', 'ms', median(ours), median(raw)),
      metric('docker-restore-to-first-command-ms', 'ms', median(restore), median(rawRestore)),
      metric('fork-3-ms', 'ms', median(sorted(fork3)), median(sorted(raw3))),
    ];
  } finally {
    for (const id of ids) await desk.checkpoints.remove(id).catch(() => undefined);
    if (rawImages.length) await docker(['rmi', '-f', ...rawImages]).catch(() => undefined);
    await desk.removeSandbox(sb, { force: true }).catch(() => undefined);
  }
}

/** One entry per backend; the QEMU owner appends theirs. */
const SECTIONS: Section[] = [dockerSection];

export default async function run(): Promise<Metric[]> {
  return withTempDesk(async (desk) => {
    const out: Metric[] = [];
    for (const section of SECTIONS) out.push(...(await section(desk)));
    return out;
  });
}
