/**
 * QEMU sandboxes: boot to SSH-ready (TCG here; KVM where it works), and the round trip of one command
 * through the persistent session shell against plain `ssh` with and without a ControlMaster, all in
 * the same run against the same VM. Then the bot desktop in a debian-desktop VM (bench/vm-desktop.ts):
 * first frame and a Chromium page load, the accel beside them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runArgv } from '../src/sandbox/run-argv.js';
import { sshExecPrefix, sshProbe, type SshTarget } from '../src/sandbox/qemu/ssh-transport.js';
import type { VmConfig, VmRun } from '../src/sandbox/qemu/vm-files.js';
import { check, measure, metric, percentile, withTempDesk, type Metric } from './harness.js';
import { vmDesktopMetrics } from './vm-desktop.js';

export const name = 'vm';

export default async function run(): Promise<Metric[]> {
  const p50 = (s: number[]) => percentile(s, 50);
  return withTempDesk(async (desk) => {
    const sb = 'bench-vm';
    await desk.createSandbox({
      name: sb,
      backend: 'qemu',
      image: 'debian-test',
      start: false,
      // A generous boot bound: TCG on a small shared host under load takes minutes.
      options: { accel: process.env.SDESK_BENCH_ACCEL ?? 'auto', bootTimeout: '1500' },
    });
    const marks: { step: string; message: string; t: number }[] = [];
    const t0 = performance.now();
    await desk.startSandbox(sb, { onProgress: (e) => marks.push({ ...e, t: performance.now() - t0 }) });
    // Measured from the launch of the QEMU that booted (a KVM attempt that fell back is counted apart).
    const launch = marks.filter((m) => m.message.startsWith('starting QEMU')).at(-1)!;
    const ssh = marks.find((m) => m.step === 'ssh' && m.message.startsWith('SSH answers'))!;
    const ready = marks.find((m) => m.step === 'cloud-init')!;
    const info = await desk.inspectSandbox(sb);
    console.log(
      `booted under ${String(info.details?.accel).toUpperCase()}${launch.t > 1000 ? ` after ${(launch.t / 1000).toFixed(1)} s spent on a KVM attempt` : ''}`,
    );

    const vmDir = info.backendRef!;
    const cfg = JSON.parse(readFileSync(join(vmDir, 'vm.json'), 'utf8')) as VmConfig;
    const boot = JSON.parse(readFileSync(join(vmDir, 'run.json'), 'utf8')) as VmRun;
    const target: SshTarget = {
      port: boot.sshPort,
      loginUser: cfg.user,
      key: join(desk.store.dataDir, 'qemu', 'id_ed25519'),
      knownHosts: join(vmDir, 'known_hosts'),
      hostKeyAlias: cfg.hostKeyAlias,
      controlPath: join(vmDir, 'ssh.ctl'),
    };
    const ok = (r: { code: number | null; stderr: string }): void => {
      if (r.code !== 0) throw new Error(`ssh failed: ${r.stderr}`);
    };
    const shell = await measure(
      async () => check(await desk.exec({ sandbox: sb, command: 'true', session: 'bench', mode: 'shell' }), { stdout: '', shell: true }),
      { warmup: 5, runs: 100 },
    );
    const oneshot = await measure(async () => check(await desk.exec({ sandbox: sb, command: 'true', session: 'bench', mode: 'oneshot' })), {
      warmup: 2,
      runs: 20,
    });
    const master = await measure(async () => ok(await runArgv([...sshExecPrefix(target, { interactive: false }), 'true'])), {
      warmup: 2,
      runs: 30,
    });
    const plain = await measure(async () => ok(await sshProbe(target, 'true', 30_000)), { warmup: 1, runs: 10 });
    const note = `accel ${String(info.details?.accel)}`;
    // One VM at a time on a small host: the first goes before the desktop VM boots.
    await desk.removeSandbox(sb, { force: true });
    const desktop = await vmDesktopMetrics(desk);
    return [
      { ...metric('boot-to-ssh-ms', 'ms', ssh.t - launch.t), note },
      { ...metric('boot-to-ready-ms', 'ms', ready.t - launch.t), note },
      metric('persistent-shell-p50', 'ms', p50(shell), p50(master)),
      metric('oneshot-p50', 'ms', p50(oneshot), p50(plain)),
      metric('ssh-controlmaster-p50', 'ms', p50(master), p50(plain)),
      metric('ssh-oneshot-p50', 'ms', p50(plain)),
      ...desktop,
    ];
  });
}
