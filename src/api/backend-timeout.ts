/**
 * One backend's answer within a deadline: a slow or unreachable engine must not hold up the list of
 * every other backend's sandboxes. A late answer is not lost: `late` gets it (the caller publishes an
 * event, so the client re-reads that sandbox).
 */
export class BackendTimeout extends Error {
  constructor(readonly ms: number) {
    super(`the backend did not answer within ${ms} ms`);
  }
}

export function withDeadline<T>(work: Promise<T>, ms: number, late: (settled: { value?: T; error?: unknown }) => void): Promise<T> {
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      timedOut = true;
      reject(new BackendTimeout(ms));
    }, ms);
    timer.unref?.();
  });
  work.then(
    (value) => timedOut && late({ value }),
    (error: unknown) => timedOut && late({ error }),
  );
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
