import { SandboxDeskError } from '../../shared/errors.js';

export type AccelChoice = 'auto' | 'kvm' | 'tcg';

/** A VM's shape and timings, parsed from the sandbox's `--option`s (and the CLI's --cpus/--memory/…). */
export interface VmOptions {
  cpus: number;
  memoryMiB: number;
  /** The overlay's virtual size; null keeps the base image's size. */
  diskGiB: number | null;
  accel: AccelChoice;
  /** A fixed loopback port for SSH; null picks a free one at every start. */
  sshPort: number | null;
  /** One budget for the whole boot: process → serial → SSH → cloud-init. */
  bootTimeoutS: number;
  /** How long an ACPI shutdown may take before the VM is stopped hard. */
  stopTimeoutS: number;
  /** Under `auto`, how long a KVM guest may stay silent on the serial console before TCG is used. */
  kvmProbeS: number;
  /** QEMU's -cpu model; null: `host` under KVM, `max` under TCG. */
  cpuType: string | null;
  /**
   * `--desktop`: cloud-init installs the bot desktop's packages at first boot (vm-desktop-install.ts).
   * False on images that have them already (debian-desktop), where the flag changes nothing.
   */
  desktop: boolean;
  /** With `desktop`: how long the first boot's package install may take (apt under TCG is slow). */
  desktopTimeoutS: number;
  /** `off`: boot cold even when a VM template fits (vm-template.ts); `auto`: use one when it fits. */
  template: 'auto' | 'off';
}

export const VM_OPTION_KEYS = [
  'cpus',
  'memory',
  'disk',
  'accel',
  'sshPort',
  'bootTimeout',
  'stopTimeout',
  'kvmProbe',
  'cpuType',
  'desktop',
  'desktopTimeout',
  'template',
] as const;

const DEFAULTS = { cpus: 2, memoryMiB: 1024, bootTimeoutS: 300, stopTimeoutS: 30, kvmProbeS: 10, desktopTimeoutS: 3600 };

function int(options: Record<string, string>, key: string, min: number, max: number, unit: string): number | undefined {
  const raw = options[key];
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < min || Number(raw) > max) {
    throw new SandboxDeskError(
      'invalid_input',
      `qemu option ${key}=${JSON.stringify(raw)} is not a whole number of ${unit} between ${min} and ${max}`,
      {
        hint: `e.g. --option ${key}=${min === 0 ? 1 : min}`,
      },
    );
  }
  return Number(raw);
}

/** Validates a qemu sandbox's options; unknown keys are refused so a typo never silently does nothing. */
export function parseVmOptions(options: Record<string, string>): VmOptions {
  const unknown = Object.keys(options).filter((k) => !(VM_OPTION_KEYS as readonly string[]).includes(k));
  if (unknown.length > 0) {
    throw new SandboxDeskError('invalid_input', `unknown qemu option${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`, {
      hint: `qemu options are ${VM_OPTION_KEYS.join(', ')}`,
    });
  }
  const accel = options.accel ?? 'auto';
  if (accel !== 'auto' && accel !== 'kvm' && accel !== 'tcg') {
    throw new SandboxDeskError('invalid_input', `qemu option accel=${JSON.stringify(accel)} is not auto, kvm or tcg`, {
      hint: 'auto uses KVM when it works and falls back to TCG; tcg always works but is slower',
    });
  }
  const cpuType = options.cpuType ?? null;
  if (cpuType !== null && !/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(cpuType)) {
    throw new SandboxDeskError('invalid_input', `qemu option cpuType=${JSON.stringify(cpuType)} is not a CPU model name`, {
      hint: 'see `qemu-system-x86_64 -cpu help`, e.g. --option cpuType=max',
    });
  }
  const desktop = options.desktop ?? 'false';
  if (desktop !== 'true' && desktop !== 'false') {
    throw new SandboxDeskError('invalid_input', `qemu option desktop=${JSON.stringify(desktop)} is not true or false`, {
      hint: 'pass --desktop (or --option desktop=true) to add the bot desktop to a Debian/Ubuntu cloud image',
    });
  }
  const template = options.template ?? 'auto';
  if (template !== 'auto' && template !== 'off') {
    throw new SandboxDeskError('invalid_input', `qemu option template=${JSON.stringify(template)} is not auto or off`, {
      hint: 'auto restores the VM from a template when one fits (image template build); off always boots it cold',
    });
  }
  return {
    template,
    cpuType,
    desktop: desktop === 'true',
    cpus: int(options, 'cpus', 1, 64, 'CPUs') ?? DEFAULTS.cpus,
    memoryMiB: int(options, 'memory', 128, 1024 * 1024, 'MiB') ?? DEFAULTS.memoryMiB,
    diskGiB: int(options, 'disk', 1, 16 * 1024, 'GiB') ?? null,
    accel,
    sshPort: int(options, 'sshPort', 1024, 65535, 'port') ?? null,
    bootTimeoutS: int(options, 'bootTimeout', 5, 3600, 'seconds') ?? DEFAULTS.bootTimeoutS,
    stopTimeoutS: int(options, 'stopTimeout', 1, 600, 'seconds') ?? DEFAULTS.stopTimeoutS,
    kvmProbeS: int(options, 'kvmProbe', 2, 120, 'seconds') ?? DEFAULTS.kvmProbeS,
    desktopTimeoutS: int(options, 'desktopTimeout', 60, 24 * 3600, 'seconds') ?? DEFAULTS.desktopTimeoutS,
  };
}
