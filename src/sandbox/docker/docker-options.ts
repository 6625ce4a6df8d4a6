import { SandboxDeskError } from '../../shared/errors.js';

/** What `--cpus`, `--memory` and `--desktop` ask of a docker sandbox, validated. */
export interface DockerOptions {
  /** CPUs (fractions allowed), enforced as HostConfig.NanoCpus; null: no limit. */
  cpus: number | null;
  /** MiB, enforced as HostConfig.Memory (swap the same, so it is a real ceiling); null: no limit. */
  memoryMiB: number | null;
  desktop: boolean;
}

/** Docker refuses containers below 6 MiB; a sandbox below 16 cannot run a shell usefully. */
const MIN_MEMORY_MIB = 16;

export function parseDockerOptions(options: Record<string, string>): DockerOptions {
  const out: DockerOptions = { cpus: null, memoryMiB: null, desktop: false };
  if (options.cpus !== undefined) {
    const n = Number(options.cpus);
    if (!/^\d+(\.\d+)?$/.test(options.cpus.trim()) || !(n > 0) || n > 1024)
      throw new SandboxDeskError('invalid_input', `--cpus ${JSON.stringify(options.cpus)} is not a number of CPUs`, {
        hint: 'give a positive number, e.g. --cpus 2 or --cpus 0.5',
      });
    out.cpus = n;
  }
  if (options.memory !== undefined) {
    const n = Number(options.memory);
    if (!/^\d+$/.test(options.memory.trim()) || n < MIN_MEMORY_MIB)
      throw new SandboxDeskError(
        'invalid_input',
        `--memory ${JSON.stringify(options.memory)} is not a size in MiB of at least ${MIN_MEMORY_MIB}`,
        {
          hint: 'give whole MiB, e.g. --memory 512',
        },
      );
    out.memoryMiB = n;
  }
  if (options.desktop !== undefined) {
    if (options.desktop !== 'true' && options.desktop !== 'false')
      throw new SandboxDeskError('invalid_input', `option desktop=${JSON.stringify(options.desktop)} is not true or false`);
    out.desktop = options.desktop === 'true';
  }
  return out;
}

/** The HostConfig fields the limits set. */
export function limitsHostConfig(o: DockerOptions): { NanoCpus?: number; Memory?: number; MemorySwap?: number } {
  return {
    ...(o.cpus !== null ? { NanoCpus: Math.round(o.cpus * 1e9) } : {}),
    ...(o.memoryMiB !== null ? { Memory: o.memoryMiB * 2 ** 20, MemorySwap: o.memoryMiB * 2 ** 20 } : {}),
  };
}
