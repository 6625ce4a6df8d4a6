import type { ApiClient } from '../api/contract.js';

/** How often a cancel is asked again while the operation has not yet begun on the server. */
const RETRY_MS = 100;

/**
 * Runs a cancellable lifecycle call (create, start) so that aborting `signal` (Ctrl-C, interrupt.ts)
 * asks the server to cancel the sandbox's operation (`cancelOperation`) — which then undoes what it
 * made and ends the call with the `cancelled` error. A cancel that arrives before the server has begun
 * the operation is asked again until it lands or the call ends.
 */
export async function cancelOperationOnAbort<T>(
  client: Pick<ApiClient, 'call'>,
  sandbox: string,
  signal: AbortSignal,
  work: () => Promise<T>,
): Promise<T> {
  let finished = false;
  const cancel = async (): Promise<void> => {
    while (!finished) {
      try {
        const op = await client.call('cancelOperation', { name: sandbox });
        if (op.cancelled || op.done) return;
      } catch {
        // Not begun yet (or already over): try again while the call runs.
      }
      await new Promise((r) => setTimeout(r, RETRY_MS));
    }
  };
  const onAbort = (): void => void cancel();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    return await work();
  } finally {
    finished = true;
    signal.removeEventListener('abort', onAbort);
  }
}
