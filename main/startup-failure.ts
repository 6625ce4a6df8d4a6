import { SandboxDeskError } from '../src/shared/errors.js';

/** The parts of Electron (and the log) the failure path needs; a test passes fakes. */
export interface StartupFailureDeps {
  dialog: { showErrorBox(title: string, content: string): void };
  log: { error(obj: Record<string, unknown>, msg: string): void };
  /** Where the log is, so the dialog can say where the details are. */
  logFile: string | null;
  exit(code: number): void;
}

/** Exit code of an app whose core never started (anything but 0, distinct from a crash's signals). */
export const STARTUP_FAILED_EXIT = 1;

/**
 * A core that fails to start must not leave a process with no window and no word: the error goes to
 * the log with its stack, a dialog tells the user what failed and what to do, and the app exits
 * non-zero. Never throws, whatever `err` is: it is the last thing that runs.
 */
export function reportStartupFailure(err: unknown, deps: StartupFailureDeps): void {
  const message = err instanceof SandboxDeskError ? err.oneLine() : err instanceof Error ? err.message : String(err);
  try {
    deps.log.error(
      {
        err:
          err instanceof Error
            ? { message: err.message, stack: err.stack, ...(err instanceof SandboxDeskError ? { code: err.code } : {}) }
            : { message },
      },
      'the core failed to start',
    );
  } catch {
    // Logging must not stop the dialog and the exit.
  }
  const where = deps.logFile ? `\n\nDetails are in the log: ${deps.logFile}` : '';
  try {
    deps.dialog.showErrorBox('Sandbox Desk could not start', `${message}${where}`);
  } catch {
    // No display: the log line above and the exit code still say it.
  }
  deps.exit(STARTUP_FAILED_EXIT);
}
