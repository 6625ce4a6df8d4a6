import type { ExecWarning } from './exec-result.js';
import type { NetworkLogEntry } from './network-policy.js';

/** One agent call as it happened: what ran where, what was measured. Types only (the UI imports them). */
export interface CallLogEntry {
  id: number;
  at: string;
  sandbox: string | null;
  session: string | null;
  tool: string;
  /** The directory the call started in (after enterability checks). */
  cwdUsed: string | null;
  /** The cwd measured when it ended; null when not observed. */
  cwdObserved: string | null;
  exitCode: number | null;
  warnings: ExecWarning[];
  /** `code: message` when the call failed. */
  error: string | null;
  durationMs: number | null;
  /**
   * The connections the call made (issue 17), on `callLog` answers for sandboxes with a network policy:
   * `process` — the connection's process descends from the shell that ran the command; `window` — its
   * process is not known and it happened while the call ran (a QEMU guest, a tool with no command).
   */
  connections?: LinkedConnection[];
}

export type LinkedConnection = NetworkLogEntry & { linkedBy: 'process' | 'window' };
