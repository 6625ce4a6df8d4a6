import type { Out } from './output.js';

/** The process-level signals a long CLI operation listens for; an argument so tests can use their own emitter. */
export interface SignalSource {
  once(event: 'SIGINT' | 'SIGTERM', fn: () => void): unknown;
  removeListener(event: 'SIGINT' | 'SIGTERM', fn: () => void): unknown;
}

/**
 * Runs a long lifecycle operation (create, start) so that the first Ctrl-C cancels it in the core —
 * which then removes what it made — instead of killing the process half-way and leaving a container,
 * a VM directory or a QEMU process behind. The handler is `once`: a second Ctrl-C gets Node's default
 * (exit at once) for a user who would rather not wait for the clean-up.
 */
export async function cancelOnInterrupt<T>(
  out: Out,
  work: (signal: AbortSignal) => Promise<T>,
  source: SignalSource = process,
): Promise<T> {
  const abort = new AbortController();
  const onSignal = (): void => {
    out.stderr('sandbox-desk: cancelling — removing what was made so far (Ctrl-C again to quit at once and leave it)\n');
    abort.abort();
  };
  source.once('SIGINT', onSignal);
  source.once('SIGTERM', onSignal);
  try {
    return await work(abort.signal);
  } finally {
    source.removeListener('SIGINT', onSignal);
    source.removeListener('SIGTERM', onSignal);
  }
}
