interface Waiter {
  /** Settle at the end of the first pixel-carrying update whose sequence number is greater than this. */
  afterSeq: number;
  resolve: () => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * Callers waiting for "the next update with pixels". Updates are numbered as they start; a waiter
 * registered while update n is being parsed is answered by n+1 or later, because n was not sent for it.
 */
export class UpdateWaiters {
  private waiters: Waiter[] = [];

  wait(afterSeq: number, timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        afterSeq,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters = this.waiters.filter((w) => w !== waiter);
          reject(new Error(`no FramebufferUpdate from the RFB server within ${timeoutMs} ms`));
        }, timeoutMs),
      };
      this.waiters.push(waiter);
    });
  }

  /**
   * Update `seq` is complete. With pixels, it answers every waiter it is due to. Without (layout-only),
   * returns true if a waiter it was due to is still waiting, so the caller should ask the server again.
   */
  updateDone(seq: number, hasPixels: boolean): boolean {
    const due = (w: Waiter): boolean => seq > w.afterSeq;
    if (!hasPixels) return this.waiters.some(due);
    for (const waiter of this.waiters.filter(due)) {
      clearTimeout(waiter.timer);
      waiter.resolve();
    }
    this.waiters = this.waiters.filter((w) => !due(w));
    return false;
  }

  rejectAll(err: Error): void {
    for (const waiter of this.waiters) {
      clearTimeout(waiter.timer);
      waiter.reject(err);
    }
    this.waiters = [];
  }
}
