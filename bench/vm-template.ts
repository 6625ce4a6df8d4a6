/**
 * VM templates (issue 37): `vm-create-first-command` — from `sandbox create --backend qemu` to the
 * first command's answer, restored from a template against a cold boot of the same image and options,
 * in the same run (TCG here; goal ≥ 15× faster). The template is built first (its build time is the
 * note, not a metric: a build happens once per image and options). One VM at a time on a small host.
 * The note also says where the restore's time went (template-use.json's phases: verify, disk copy,
 * QEMU start, state load, SSH connect, identity, SSH with the new key) and how long the create and
 * the first command took apart, so a slow figure on a loaded host can be read.
 *
 * `desktop-vm-first-frame` (issue 37's last VM goal, ≥ 10×): from `sandbox create --backend qemu --image
 * debian-desktop` to the first full framebuffer update over the app's screen stream (as bench/warm.ts
 * measures desktop-first-frame for Docker). From a desktop template (`image template build
 * debian-desktop --desktop`: the desktop runs in the saved memory and is handed over at the create, no
 * desktop start) against a cold one (boot, then `desktop start`), in the same run. The host's load
 * average is noted at each end: the machine is shared.
 */
import { loadavg } from 'node:os';
import { check, metric, withTempDesk, type Metric } from './harness.js';
import type { SandboxDesk } from '../src/api/sandbox-desk.js';
import { RfbClient, transportFromStreams } from '../src/desktop/rfb/rfb-client.js';

export const name = 'vm-template';

const OPTIONS = { memory: '1024', cpus: '2', accel: process.env.SDESK_BENCH_ACCEL ?? 'tcg', bootTimeout: '1500' };
/** The desktop VM: debian-desktop's own memory advice (2 GiB: Xfce and Chromium). */
const DESKTOP_OPTIONS = { ...OPTIONS, memory: '2048' };
const FRAME_MS = 600_000;

/** create → (cold: `desktop start`) → the first full frame over the screen stream; the VM removed after. */
async function createFirstFrame(desk: SandboxDesk, sb: string, options: Record<string, string>, startDesktop: boolean) {
  const t = performance.now();
  const made = await desk.createSandbox({ name: sb, backend: 'qemu', image: 'debian-desktop', options });
  const createMs = performance.now() - t;
  try {
    const d = made.sandbox.details ?? {};
    if (startDesktop) await desk.desktop.start(sb, { geometry: '1280x800' });
    else if (d.desktopFromTemplate !== true) throw new Error(`the desktop was not handed over from the template: ${String(d.desktopNote)}`);
    const stream = await desk.desktop.openScreenStream(sb);
    const rfb = await RfbClient.connect(
      transportFromStreams(stream.stdout, stream.stdin, () => stream.kill()),
      { timeoutMs: FRAME_MS },
    );
    await rfb.requestUpdate(false, FRAME_MS);
    const ms = performance.now() - t;
    const size = `${rfb.width}x${rfb.height}`;
    rfb.close();
    stream.kill();
    return { ms, createMs, size, fromTemplate: d.fromTemplate, phases: d.templateRestorePhases };
  } finally {
    await desk.removeSandbox(sb, { force: true });
  }
}

async function desktopFirstFrame(desk: SandboxDesk): Promise<Metric> {
  const load0 = loadavg()[0]!;
  const t0 = performance.now();
  const build = desk.images.buildVmTemplate({
    image: 'debian-desktop',
    memory: Number(DESKTOP_OPTIONS.memory),
    cpus: Number(DESKTOP_OPTIONS.cpus),
    desktop: true,
  });
  const task = await build.done;
  if (task.state !== 'succeeded') throw new Error(`the desktop template build ${task.state}: ${task.error?.message ?? ''}`);
  const buildS = (performance.now() - t0) / 1000;
  console.log(`desktop template ${task.result?.ref} built in ${buildS.toFixed(1)} s`);
  const warm = await createFirstFrame(desk, 'bench-dtpl-warm', DESKTOP_OPTIONS, false);
  if (warm.fromTemplate !== true) throw new Error('the desktop create was not restored from the template');
  const loadWarm = loadavg()[0]!;
  const cold = await createFirstFrame(desk, 'bench-dtpl-cold', { ...DESKTOP_OPTIONS, template: 'off' }, true);
  if (cold.fromTemplate !== false) throw new Error('the cold desktop create was restored from the template');
  const load1 = loadavg()[0]!;
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  console.log(
    `desktop first frame: from the template ${s(warm.ms)} (create ${s(warm.createMs)}), cold ${s(cold.ms)} (create ${s(cold.createMs)})`,
  );
  return {
    ...metric('desktop-vm-first-frame', 'ms', warm.ms, cold.ms),
    note:
      `accel ${DESKTOP_OPTIONS.accel}, debian-desktop ${DESKTOP_OPTIONS.memory} MiB ${DESKTOP_OPTIONS.cpus} CPUs, frame ${warm.size}; ` +
      `desktop template build ${buildS.toFixed(0)} s (once); from the template: create ${s(warm.createMs)}, ` +
      `first frame ${s(warm.ms - warm.createMs)} after it (no desktop start); cold: create ${s(cold.createMs)}, ` +
      `desktop start + first frame ${s(cold.ms - cold.createMs)}; restore phases: ${String(warm.phases)}; ` +
      `load average (1 min) ${load0.toFixed(1)} at the start, ${loadWarm.toFixed(1)} after the template's, ${load1.toFixed(1)} after the cold one`,
  };
}

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
    const shell: Metric = {
      ...metric('vm-create-first-command', 'ms', warm.ms, cold.ms),
      note:
        `accel ${OPTIONS.accel}; template build ${buildS.toFixed(0)} s (once); from the template: create ${s(warm.createMs)}, ` +
        `first command ${s(warm.ms - warm.createMs)}; restore phases: ${String(warm.phases)}; host load ${loadavg()[0]!.toFixed(1)}`,
    };
    return [shell, await desktopFirstFrame(desk)];
  });
}
