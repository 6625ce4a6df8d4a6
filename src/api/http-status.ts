import type { ErrorCode } from '../shared/errors.js';

/**
 * The one table from Sandbox Desk's error codes to HTTP statuses. Typed by the `ErrorCode` union, so
 * a new code without a status here fails the typecheck.
 */
export const HTTP_STATUS: { readonly [C in ErrorCode]: number } = {
  invalid_input: 400,
  unknown_backend: 400,
  cwd_unresolved: 400,
  image_invalid: 400,
  not_found: 404,
  image_not_found: 404,
  sandbox_missing: 404,
  name_taken: 409,
  refused: 409,
  human_has_control: 409,
  stale_frame: 409,
  // The user stopped it: not the server's fault, and the request did not do what it asked.
  cancelled: 409,
  unsupported: 501,
  no_space: 507,
  version_mismatch: 409,
  placement_refused: 409,
  sandbox_not_running: 409,
  desktop_not_running: 409,
  port_in_use: 409,
  boot_failed: 503,
  engine_unreachable: 503,
  backend_unavailable: 503,
  build_failed: 422,
  registry_unreachable: 503,
  service_unavailable: 503,
  internal: 500,
};

/** The status for a code from the wire (a string); anything unknown is the server's fault. */
export function statusFor(code: string): number {
  return Object.hasOwn(HTTP_STATUS, code) ? HTTP_STATUS[code as ErrorCode] : 500;
}
