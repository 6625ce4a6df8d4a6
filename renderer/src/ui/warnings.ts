import type { ExecWarning, WarningCode } from '../../../src/api/contract.js';

/**
 * Short labels for the warnings a command can leave on its session, worded for someone scanning a
 * table: what happened to the directory, not how the wrapper noticed. `bad` ones mean the session is
 * not where it asked to be (or we do not know where it is).
 */
const LABELS: Record<WarningCode, { label: string; bad: boolean }> = {
  cwd_missing: { label: 'missing on disk', bad: true },
  cwd_denied: { label: 'not accessible', bad: true },
  cwd_not_directory: { label: 'not a directory', bad: true },
  cwd_unenterable: { label: 'nothing enterable', bad: true },
  host_path_dropped: { label: 'host path dropped', bad: true },
  host_path_translated: { label: 'host path translated', bad: false },
  default_cwd_ignored: { label: 'default cwd ignored', bad: true },
  workdir_relative: { label: 'relative workdir resolved', bad: false },
  cwd_deleted: { label: 'deleted by the command', bad: true },
  framing_broken: { label: 'not observed (output framing broken)', bad: true },
  cwd_unobserved: { label: 'not observed (interrupted)', bad: true },
  backend_warning: { label: 'backend warning', bad: false },
  output_truncated: { label: 'output truncated', bad: false },
  shell_fallback: { label: 'ran one-shot (no shell)', bad: false },
  environment_recreated: { label: 'sandbox recreated', bad: true },
  terminal_busy: { label: 'waited for the terminal', bad: false },
  checkpoint_disk_only: { label: 'checkpoint is disk only', bad: false },
  not_restarted: { label: 'did not come back after the restore', bad: true },
  cwd_not_utf8: { label: 'not observed (name not UTF-8)', bad: true },
  // The call never ran: the session stays where it was.
  queue_timeout: { label: 'did not run (timed out waiting its turn)', bad: false },
  queue_interrupted: { label: 'did not run (interrupted waiting its turn)', bad: false },
};

export function warningLabel(w: Pick<ExecWarning, 'code'>): { label: string; bad: boolean } {
  return LABELS[w.code] ?? { label: w.code.replace(/_/g, ' '), bad: true };
}

/** The full sentence for a tooltip: the server's message and, for path warnings, asked → used. */
export function warningTitle(w: ExecWarning): string {
  const paths = w.asked || w.used ? `\n${w.asked ?? '?'} → ${w.used ?? '?'}` : '';
  return `${w.code}: ${w.message}${paths}`;
}
