import { SandboxDeskError } from '../../shared/errors.js';
import type { ProgressEvent } from '../provider.js';
import { CLOUD_INIT_DONE_PROBE } from './cloud-init-seed.js';
import { isVmProcess } from './qemu-process.js';
import { serialSize, serialTail } from './serial-log.js';
import { isHostKeyMismatch, sshProbe, type SshTarget } from './ssh-transport.js';
import type { VmFiles, VmRun } from './vm-files.js';
import { waitForDesktopInstall } from './vm-desktop-install.js';

export interface ReadinessInput {
  files: VmFiles;
  target: SshTarget;
  run: VmRun;
  /** The one overall deadline (ms since epoch) for the whole boot. */
  deadline: number;
  /** When the boot started, for "after N s" in progress messages. */
  startedAt: number;
  progress: (e: ProgressEvent) => void;
  signal?: AbortSignal | undefined;
  /** Under KVM on probation: the serial console must show output within this many ms. */
  silentLimitMs: number | null;
  /** The deadline's length in seconds, for the error message. */
  timeoutS: number;
  /**
   * `--desktop` on a VM whose packages are not in yet: after SSH, wait for cloud-init's install with
   * its own deadline (ms since epoch), which is longer than a boot's (an apt install under TCG).
   */
  desktopDeadline?: number | null;
  /** Called once the desktop's packages are in (the provider remembers it, so later boots skip the wait). */
  onDesktopInstalled?: (browser: string | null) => void;
}

export type ReadinessOutcome = 'ready' | 'kvm_silent';

/** cloud-init's last line of a boot on the console. */
const CLOUD_INIT_FINISHED = /Cloud-init v\. \S+ finished at/;
const SSH_GRACE_MS = 30_000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Waits for a booting VM in order — QEMU alive → the serial console shows the guest booting → SSH
 * answers with the pinned host key → this boot's cloud-init is done — reporting each step as it
 * passes. Fails with the serial log's tail when QEMU dies, the host key is wrong, or the deadline passes.
 */
export async function waitUntilReady(input: ReadinessInput): Promise<ReadinessOutcome> {
  const { files, run, progress } = input;
  let deadline = input.deadline;
  const since = (): string => `${((Date.now() - input.startedAt) / 1000).toFixed(1)} s`;
  const fail = (what: string, hint: string): SandboxDeskError =>
    new SandboxDeskError('boot_failed', `${what}. Serial log tail (${files.serialLog}):\n${serialTail(files.serialLog)}`, {
      hint,
      details: { serialLog: files.serialLog },
    });
  const check = (waitingFor: string, useDeadline = true): void => {
    if (input.signal?.aborted) throw new SandboxDeskError('boot_failed', `the boot was cancelled while waiting for ${waitingFor}`);
    if (!isVmProcess(run.pid, run.pidStart, files.qmpSocket)) {
      throw fail(
        `QEMU (pid ${run.pid}) exited while waiting for ${waitingFor}`,
        'see the serial log; check the image boots (a kernel panic or a missing bootloader shows there)',
      );
    }
    if (useDeadline && Date.now() > deadline) {
      throw fail(
        `the VM was not ready within ${input.timeoutS} s (still waiting for ${waitingFor})`,
        'a slow host may need more time: --option bootTimeout=SECONDS; a guest that never starts sshd needs a working image with cloud-init and openssh-server',
      );
    }
  };

  check('QEMU to start');
  progress({ step: 'process', message: `QEMU is running (pid ${run.pid}, ${run.accel.toUpperCase()})` });

  while (serialSize(files.serialLog) === 0) {
    check('the guest to print on its serial console');
    if (input.silentLimitMs !== null && Date.now() - input.startedAt > input.silentLimitMs) return 'kvm_silent';
    await sleep(200);
  }
  progress({ step: 'serial', message: `the guest is booting (serial output after ${since()})` });

  let last = '';
  let lastReport = Date.now();
  let bootedAt: number | null = null;
  for (;;) {
    check(`SSH on 127.0.0.1:${run.sshPort}${last ? ` (last answer: ${last})` : ''}`);
    // A guest that finished booting but has no SSH after a grace period will not get one (sshd failed,
    // no network): say so now instead of at the deadline.
    bootedAt ??= CLOUD_INIT_FINISHED.test(serialTail(files.serialLog, 40)) ? Date.now() : null;
    if (bootedAt !== null && Date.now() - bootedAt > SSH_GRACE_MS) {
      throw fail(
        `the guest finished booting but SSH on 127.0.0.1:${run.sshPort} does not answer${last ? ` (last answer: ${last})` : ''}`,
        'sshd in the guest failed or its network is down; see the serial log',
      );
    }
    const r = await sshProbe(input.target, 'true', 12_000);
    if (r.code === 0) break;
    if (isHostKeyMismatch(r.stderr)) {
      throw fail(
        `the VM's SSH host key is not the one pinned for it in ${files.knownHosts}`,
        'something else answered on the forwarded port, or the guest ignored the cloud-init seed; remove and recreate the sandbox',
      );
    }
    last = r.stderr.trim().split('\n').pop() ?? '';
    if (Date.now() - lastReport > 10_000) {
      progress({ step: 'ssh', message: `waiting for SSH (${since()})` });
      lastReport = Date.now();
    }
    await sleep(1000);
  }
  progress({ step: 'ssh', message: `SSH answers on 127.0.0.1:${run.sshPort} (after ${since()})` });

  if (input.desktopDeadline) {
    const desktopDeadline = input.desktopDeadline;
    const { browser } = await waitForDesktopInstall({
      probe: (command, timeoutMs) => sshProbe(input.target, command, timeoutMs),
      progress,
      since,
      check: (waitingFor) => {
        if (Date.now() > desktopDeadline) {
          throw fail(
            `the desktop's packages were not installed within ${Math.round((desktopDeadline - input.startedAt) / 1000)} s (still waiting for ${waitingFor})`,
            'a slow host or mirror may need more time: --option desktopTimeout=SECONDS',
          );
        }
        check(waitingFor, false);
      },
    });
    input.onDesktopInstalled?.(browser);
    // cloud-init's ready marker follows the install at once; the boot's own deadline may be long past.
    deadline = Math.max(deadline, Date.now() + 120_000);
  }

  for (;;) {
    check('cloud-init to finish this boot');
    const r = await sshProbe(input.target, CLOUD_INIT_DONE_PROBE, 20_000);
    if (r.code === 0) break;
    await sleep(1000);
  }
  progress({ step: 'cloud-init', message: `cloud-init finished; the VM is ready (after ${since()})` });
  return 'ready';
}
