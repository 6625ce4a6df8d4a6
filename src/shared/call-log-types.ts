import type { ExecWarning } from './exec-result.js';

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
}
