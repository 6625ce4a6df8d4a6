import { expect } from 'vitest';
import { SandboxDeskError } from '../src/shared/errors.js';

/** Runs fn and returns the SandboxDeskError it throws; fails the test when it throws nothing or something else. */
export function thrown(fn: () => unknown): SandboxDeskError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(SandboxDeskError);
    return err as SandboxDeskError;
  }
  throw new Error('expected a SandboxDeskError, nothing was thrown');
}

/** Awaits p and returns the SandboxDeskError it rejects with, checking its code. */
export async function rejectsWith(p: Promise<unknown>, code: string): Promise<SandboxDeskError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err, `expected a ${code} error`).toBeInstanceOf(SandboxDeskError);
  expect((err as SandboxDeskError).code).toBe(code);
  return err as SandboxDeskError;
}
