/**
 * Where a restore from a template (or a fork) spends its time, phase by phase: each mark ends the
 * phase that ran since the previous one. The totals go into template-use.json and the create's
 * progress, so a slow restore on a loaded host says which step was slow (issue 37's profile).
 */
export class PhaseTimer {
  private readonly spans: { phase: string; ms: number }[] = [];
  private last: number;

  constructor(private readonly now: () => number = () => performance.now()) {
    this.last = now();
  }

  /** Ends the phase that ran since the previous mark (or since the timer was made). */
  mark(phase: string): void {
    const t = this.now();
    this.spans.push({ phase, ms: t - this.last });
    this.last = t;
  }

  /** Milliseconds per phase, in the order they first ran; a phase run twice (a retry) is summed. */
  totals(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const { phase, ms } of this.spans) out[phase] = Math.round((out[phase] ?? 0) + ms);
    return out;
  }

  /** `overlay 0.1 s, state-load 1.2 s, …`: for a progress line. */
  summary(): string {
    return Object.entries(this.totals())
      .map(([phase, ms]) => `${phase} ${(ms / 1000).toFixed(1)} s`)
      .join(', ');
  }
}
