import { closeSync, constants, openSync } from 'node:fs';
import { release } from 'node:os';
import { readJson, writeJson } from './vm-files.js';
import type { AccelChoice } from './vm-options.js';

/**
 * Whether KVM can be tried at all: the device opens read-write for this user. That is necessary, not
 * sufficient — on some hosts /dev/kvm opens and QEMU says it runs, yet the guest never gets past early
 * boot — so a KVM boot is also watched for progress (see the provider) and the outcome remembered here.
 */
export function kvmDeviceUsable(device = '/dev/kvm'): { usable: boolean; why: string } {
  try {
    closeSync(openSync(device, constants.O_RDWR));
    return { usable: true, why: `${device} opens read-write` };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { usable: false, why: code === 'ENOENT' ? `${device} does not exist` : `${device} cannot be opened (${code})` };
  }
}

/** What a KVM boot on this host showed last time, per kernel (a new kernel may behave differently). */
export interface KvmVerdict {
  works: boolean;
  kernel: string;
  at: string;
  detail: string;
}

export function readKvmVerdict(path: string): KvmVerdict | null {
  const v = readJson<KvmVerdict>(path);
  return v && v.kernel === release() ? v : null;
}

export function writeKvmVerdict(path: string, works: boolean, detail: string): void {
  writeJson(path, { works, kernel: release(), at: new Date().toISOString(), detail } satisfies KvmVerdict);
}

export interface AccelDecision {
  accel: 'kvm' | 'tcg';
  /** Under `auto` with no verdict yet: watch the boot and fall back to TCG if the guest stays silent. */
  probation: boolean;
  /** Said to the user as a warning (e.g. why KVM is not used). */
  warning: string | null;
}

export function decideAccel(
  choice: AccelChoice,
  device: { usable: boolean; why: string },
  verdict: KvmVerdict | null,
  verdictPath: string,
): AccelDecision {
  if (choice === 'tcg') return { accel: 'tcg', probation: false, warning: null };
  if (choice === 'kvm') return { accel: 'kvm', probation: false, warning: null };
  if (!device.usable) return { accel: 'tcg', probation: false, warning: null };
  if (verdict && !verdict.works) {
    return {
      accel: 'tcg',
      probation: false,
      warning: `KVM is not used: a KVM guest made no progress on this host (${verdict.detail}, ${verdict.at}); running under TCG, which is slower. Delete ${verdictPath} to try KVM again.`,
    };
  }
  return { accel: 'kvm', probation: !verdict, warning: null };
}
