/**
 * VM templates (issue 37): `vm-create-first-command` — from `sandbox create --backend qemu` to the
 * first command's answer, restored from a template against a cold boot of the same image and options,
 * in the same run (TCG here; goal ≥ 15× faster). The template is built first (its build time is the
 * note, not a metric: a build happens once per image and options). One VM at a time on a small host.
 * The note also says where the restore's time went (template-use.json's phases: verify, disk copy,
 * QEMU start, state load, SSH connect, identity, SSH with the new key) and how long the create and
 * the first command took apart, so a slow figure on a loaded host can be read.
 * The desktop VM's first frame from a template is not measured here (see the report of issue 37).
 */
import { loadavg } from 'node:os';
import { check, metric, withTempDesk, type Metric } from './harness.js';

export const name = 'vm-template';

const OPTIONS = { memory: '1024', cpus: '2', accel: process.env.SDESK_BENCH_ACCEL ?? 'tcg', bootTimeout: '1500' };

export default async function run(): Promise<Metric[]> {
  return withTempDesk(async (desk) => {
    const t0 = performance.now();
    const build = desk.images.buildVmTemplate({ image: 'debian-test', memory: Number(OPTIONS.memory), cpus: Number(OPTIONS.cpus) });
    const task = await build.done;
    if (task.state !== 'succeeded') throw new Error(`the template build ${task.state}: ${task.error?.message ?? ''}`);
    const buildS = (performance.now() - t0) / 1000;
    console.log(`template ${task.result?.ref} built in ${buildS.toFixed(1)} s`);

    const createFirstCommand = async (sb: string, options: Record<string, string>) => {
      const t = performance.now();
      const made = await desk.createSandbox({ name: sb, backend: 'qemu', image: 'debian-test', options });
      const createMs = performance.now() - t;
      check(await desk.exec({ sandbox: sb, command: 'true', session: 'bench' }));
      const ms = performance.now() - t;
      await desk.removeSandbox(sb, { force: true });
      const d = made.sandbox.details ?? {};
      return { ms, createMs, fromTemplate: d.fromTemplate, phases: d.templateRestorePhases };
    };
    const warm = await createFirstCommand('bench-tpl-warm', OPTIONS);
    if (warm.fromTemplate !== true) throw new Error('the create was not restored from the template');
    const cold = await createFirstCommand('bench-tpl-cold', { ...OPTIONS, template: 'off' });
    if (cold.fromTemplate !== false) throw new Error('the cold create was restored from the template');
    const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
    console.log(`from the template ${s(warm.ms)} (create ${s(warm.createMs)}; restore: ${String(warm.phases)}), cold ${s(cold.ms)}`);
    return [
      {
        ...metric('vm-create-first-command', 'ms', warm.ms, cold.ms),
        note:
          `accel ${OPTIONS.accel}; template build ${buildS.toFixed(0)} s (once); from the template: create ${s(warm.createMs)}, ` +
          `first command ${s(warm.ms - warm.createMs)}; restore phases: ${String(warm.phases)}; host load ${loadavg()[0]!.toFixed(1)}`,
      },
    ];
  });
}
