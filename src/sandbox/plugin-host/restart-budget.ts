/**
 * How often a crashed plugin host may be restarted: at most `max` restarts within any `windowMs`
 * (3 per 10 minutes). A plugin that keeps crashing is then left down, and its calls fail fast,
 * instead of the app spending its life restarting it. The clock is injectable for tests.
 */
export class RestartBudget {
  private readonly restarts: number[] = [];

  constructor(
    readonly max = 3,
    readonly windowMs = 10 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes one restart if the window allows it. */
  take(): boolean {
    const t = this.now();
    while (this.restarts.length && this.restarts[0]! <= t - this.windowMs) this.restarts.shift();
    if (this.restarts.length >= this.max) return false;
    this.restarts.push(t);
    return true;
  }

  /** Restarts counted in the current window. */
  used(): number {
    const t = this.now();
    return this.restarts.filter((r) => r > t - this.windowMs).length;
  }
}
