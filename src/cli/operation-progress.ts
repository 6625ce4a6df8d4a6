import type { ApiClient, SandboxOperation } from '../api/contract.js';

/** One step of a long operation, as the CLI prints it (the provider's ProgressEvent, without its time). */
export interface ProgressLine {
  step: string;
  message: string;
  level?: 'info' | 'warning';
}

/** How often a long operation's progress is asked for while it runs. */
export const PROGRESS_POLL_MS = 200;

/**
 * Runs a long call on a sandbox (create, start, stop, checkpoint, restore, fork) and reports its steps
 * as they happen. The call itself answers only at the end, so the steps are read beside it from the
 * operation the server tracks (`sandboxProgress`) — only those of an operation that began after this
 * call was made, each once, and the last ones after it ends, so none is lost to the polling interval.
 */
export async function withOperationProgress<T>(
  client: Pick<ApiClient, 'call'>,
  sandbox: string,
  onProgress: (e: ProgressLine) => void,
  work: () => Promise<T>,
  pollMs = PROGRESS_POLL_MS,
): Promise<T> {
  const since = Date.now();
  let op: string | null = null;
  let printed = 0;
  const report = (o: SandboxOperation | null): void => {
    if (!o || Date.parse(o.startedAt) < since) return;
    const id = `${o.kind}@${o.startedAt}`;
    if (id !== op) [op, printed] = [id, 0];
    for (const e of o.events.slice(printed)) onProgress({ step: e.step, message: e.message, level: e.level });
    printed = Math.max(printed, o.events.length);
  };
  const poll = async (): Promise<void> => {
    try {
      report(await client.call('sandboxProgress', { name: sandbox }));
    } catch {
      // Progress is a courtesy: the call's own answer (or error) is what counts.
    }
  };
  let done = false;
  let polling: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    polling = polling.then(() => (done ? undefined : poll()));
  }, pollMs);
  try {
    return await work();
  } finally {
    done = true;
    clearInterval(timer);
    await polling;
    await poll();
  }
}
