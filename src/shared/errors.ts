/**
 * Errors of Sandbox Desk itself, as opposed to a failing command inside a sandbox.
 *
 * Every error carries a stable machine-readable `code`, a message that says what was wrong, and where
 * possible a `hint` that says what to do. The CLI maps all of them to exit code 125 (the code
 * `docker exec` uses for its own failures) so they never mix with a command's exit code.
 */
export type ErrorCode =
  | 'invalid_input'
  | 'unknown_backend'
  | 'name_taken'
  | 'not_found'
  | 'image_not_found'
  | 'image_invalid'
  | 'port_in_use'
  | 'boot_failed'
  | 'engine_unreachable'
  | 'sandbox_not_running'
  | 'sandbox_missing'
  | 'backend_unavailable'
  | 'cwd_unresolved'
  | 'refused'
  | 'placement_refused'
  | 'desktop_not_running'
  | 'human_has_control'
  | 'stale_frame'
  | 'build_failed'
  | 'registry_unreachable'
  | 'cancelled'
  /** The backend lacks a capability the operation needs (e.g. checkpoints, memory checkpoints, a network policy). */
  | 'unsupported'
  /** The sandbox's filesystem has less free space than a file being written needs (an upload, write_file). */
  | 'no_space'
  /** The service runs another version of Sandbox Desk than this client and cannot be restarted now. */
  | 'version_mismatch'
  /** A client could not reach the Sandbox Desk service, or the connection dropped before the answer came. */
  | 'service_unavailable'
  | 'internal';

export class SandboxDeskError extends Error {
  readonly code: ErrorCode;
  readonly hint: string | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, opts: { hint?: string; details?: Record<string, unknown>; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'SandboxDeskError';
    this.code = code;
    this.hint = opts.hint;
    this.details = opts.details;
  }

  /** One line for a terminal: the message, then what to do. */
  oneLine(): string {
    return this.hint ? `${this.message} — ${this.hint}` : this.message;
  }

  toJSON(): { code: ErrorCode; message: string; hint?: string; details?: Record<string, unknown> } {
    return {
      code: this.code,
      message: this.message,
      ...(this.hint ? { hint: this.hint } : {}),
      ...(this.details ? { details: this.details } : {}),
    };
  }
}

export function isSandboxDeskError(err: unknown): err is SandboxDeskError {
  return err instanceof SandboxDeskError;
}

/** Wraps anything thrown into a SandboxDeskError without losing the original as `cause`. */
export function asSandboxDeskError(err: unknown): SandboxDeskError {
  if (err instanceof SandboxDeskError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new SandboxDeskError('internal', message, { cause: err });
}
