/**
 * One command at a time per session, in arrival order. A call takes its place in its session's line the
 * moment it arrives (before any await: connecting to the sandbox, opening a shell), and its start cwd is
 * planned only once its turn came — after the previous command recorded where it ended. Otherwise a
 * call planned while another ran starts in a directory that other call has already left.
 *
 * Waiting counts against the call's own timeout: a turn that does not come before the deadline ends
 * the wait (`timeout`), and the call runs nothing. Leaving the line early never lets the next call
 * overtake the one still running: a turn is handed on only once every earlier turn was handed on.
 */

/** How a wait for a turn ended. */
export type TurnOutcome = 'go' | 'timeout' | 'interrupt';

export interface SessionTurn {
  /** When the call arrived (performance.now()): its timeout runs from here. */
  readonly enteredAt: number;
  /** Resolves when the turn came (`go`), the deadline passed or the signal aborted while waiting. */
  readonly ready: Promise<TurnOutcome>;
  /** Milliseconds spent waiting (until `ready` resolved; 0 before). */
  readonly queuedMs: number;
  /** Ends the turn (after the command's writes): the next call may run. Idempotent. */
  release(): void;
}

export class SessionTurns {
  /** Per session: the promise that resolves when the last call in its line has handed on. */
  private readonly tails = new Map<string, Promise<void>>();

  private static key(sandbox: string, session: string): string {
    return JSON.stringify([sandbox, session]);
  }

  /** Calls waiting or running, over every session (for tests and diagnostics). */
  get lines(): number {
    return this.tails.size;
  }

  /**
   * Takes a place in the session's line now. The wait ends after `timeoutMs` at the latest, or when
   * `signal` aborts; `release()` must be called in every case (a `finally`).
   */
  enter(sandbox: string, session: string, opts: { timeoutMs: number; signal?: AbortSignal | undefined }): SessionTurn {
    const key = SessionTurns.key(sandbox, session);
    const enteredAt = performance.now();
    const previous = this.tails.get(key) ?? Promise.resolve();
    let handOn!: () => void;
    const done = new Promise<void>((r) => (handOn = r));
    // The next call waits until this one handed on AND every call before it did (a call that gave up
    // waiting releases early, but must not let its successor run beside the command still running).
    const tail = Promise.all([previous, done]).then(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });

    let queuedMs = 0;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const ready = new Promise<TurnOutcome>((resolve) => {
      let settled = false;
      const finish = (o: TurnOutcome): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (onAbort) opts.signal?.removeEventListener('abort', onAbort);
        queuedMs = Math.round((performance.now() - enteredAt) * 10) / 10;
        resolve(o);
      };
      if (opts.signal?.aborted) return finish('interrupt');
      timer = setTimeout(() => finish('timeout'), Math.max(0, opts.timeoutMs));
      onAbort = () => finish('interrupt');
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      void previous.then(() => finish('go'));
    });
    let released = false;
    return {
      enteredAt,
      ready,
      get queuedMs() {
        return queuedMs;
      },
      release() {
        if (released) return;
        released = true;
        handOn();
      },
    };
  }
}
