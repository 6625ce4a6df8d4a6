/**
 * What a backend can tell about a sandbox besides its state: its own logs (a container's output, a VM's
 * serial console) and how much CPU and memory it uses. Both optional on a provider: a backend without
 * them simply has no backend log sources and no resource figures (the app says so, never guesses).
 */
import type { IDisposable } from '../shared/lifecycle.js';

/** One log a backend keeps for a sandbox. `exists` false: it would be there, but is not (yet, or any more). */
export interface LogSourceSpec {
  /** Stable id: `container`, `serial`, `virtiofsd-0`, …; what `--source` takes. */
  id: string;
  label: string;
  exists: boolean;
  /** Where it lives (a host path, `docker logs`), or why it does not exist. */
  detail: string | null;
}

export interface LogFollower {
  /** Text as it arrives (whole UTF-8 characters). */
  onData: (text: string) => void;
  /** The source ended (the container went away, the file's reader failed); err says why, when it was an error. */
  onEnd: (err?: Error) => void;
}

/** Ref: the provider's SandboxRef (a parameter, so this file and provider.ts do not import each other). */
export interface LogCapability<Ref> {
  sources(ref: Ref): Promise<LogSourceSpec[]>;
  /** The last `tail` lines of a source (the caller checked it exists). */
  read(ref: Ref, source: string, tail: number): Promise<string>;
  /** The last `tail` lines, then every new line until disposed. */
  follow(ref: Ref, source: string, tail: number, to: LogFollower): Promise<IDisposable>;
}

/** One reading of a sandbox's counters; the app turns two readings into a CPU percentage. */
export interface ResourceSample {
  /** CPU time the whole sandbox used so far, in nanoseconds (monotonic for one incarnation). */
  cpuNs: number;
  /** When it was read (ms since the epoch), by the same clock as the next reading. */
  atMs: number;
  memoryBytes: number;
  /** The memory the sandbox may use (a container's limit, a VM's RAM); null when unbounded or unknown. */
  memoryLimitBytes: number | null;
  /**
   * What memoryBytes measures when it is not the sandbox's own use: `vm-process` — the QEMU process's
   * resident memory (guest RAM it touched plus QEMU's own overhead), so it can exceed the guest's size
   * (memoryLimitBytes) and must not be read as "x of limit".
   */
  memoryOf?: 'vm-process';
}

export interface ResourceCapability<Ref> {
  /** null when the sandbox is not running (nothing to measure). */
  sample(ref: Ref): Promise<ResourceSample | null>;
}
