import type { SandboxStats } from './observability-types.js';

/**
 * A sandbox's memory in words, comparing like with like: a container's use "of" its limit; for a VM
 * the QEMU process's resident memory beside the guest's size, never "1.3 GiB of 1.0 GiB" (the process
 * holds QEMU's own overhead besides the guest RAM it touched).
 */
export function memoryText(s: Pick<SandboxStats, 'memoryBytes' | 'memoryLimitBytes' | 'memoryOf'>, format: (n: number) => string): string {
  if (s.memoryOf === 'vm-process')
    return `QEMU process ${format(s.memoryBytes)}${s.memoryLimitBytes ? ` (guest ${format(s.memoryLimitBytes)})` : ''}`;
  return `${format(s.memoryBytes)}${s.memoryLimitBytes ? ` of ${format(s.memoryLimitBytes)}` : ''}`;
}
