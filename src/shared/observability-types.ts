/** Wire types of logs and resources (issue 14 items 2 and 5): what the API, the CLI and the window share. */

/** A log the app can show for a sandbox. `exists` false: known, but not there now (detail says why). */
export interface LogSourceInfo {
  /** What `--source` and `readLog`'s `source` take: `container`, `serial`, `virtiofsd-0`, `desktop`, `app`, … */
  id: string;
  label: string;
  /** Who keeps it: the backend, the desktop inside the sandbox, or this app. */
  kind: 'backend' | 'desktop' | 'app';
  exists: boolean;
  detail: string | null;
}

export interface LogText {
  sandbox: string;
  source: string;
  /** The last lines asked for (at most `tail`), newline-terminated where the source's were. */
  text: string;
  tail: number;
}

/** One reading of a sandbox's CPU and memory. */
export interface SandboxStats {
  sandbox: string;
  at: string;
  /** Percent of one CPU core over the interval since the previous reading (200 = two cores busy). */
  cpuPercent: number;
  memoryBytes: number;
  memoryLimitBytes: number | null;
  /**
   * What memoryBytes measures when it is not the sandbox's own use: `vm-process` — the QEMU process's
   * resident memory (guest RAM it touched plus QEMU's own overhead), so it can exceed the guest's size
   * (memoryLimitBytes) and must not be read as "x of limit".
   */
  memoryOf?: 'vm-process';
}

/** The container engine's own state, for the status line. */
export interface EngineInfo {
  docker: {
    reachable: boolean;
    /** Why it is not reachable (the endpoint and the error). */
    error: string | null;
    endpoint: string | null;
    version: string | null;
    apiVersion: string | null;
    /** `docker system df`: bytes held by images, containers' writable layers, volumes and the build cache. */
    disk: { images: number; containers: number; volumes: number; buildCache: number } | null;
  } | null;
}

/** How many of a log's last lines a read or a follow starts with when none is asked for. */
export const DEFAULT_LOG_TAIL = 200;
