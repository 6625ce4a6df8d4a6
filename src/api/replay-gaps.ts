/**
 * What a gap in a screen recording was, for the card an export draws there (issue 36): the
 * sandbox's tracked operations (the task list's rows, kept by every process on the data dir) say
 * whether it was restored or its desktop started again inside the gap. What none of them explains
 * reads as "not recorded".
 */

/** The part of an operation (OperationView) a gap's label needs. */
export interface GapOperation {
  kind: string;
  startedAt: string;
}

/** A restore's desktop goes down a little before the operation row is written: this much slack. */
const BEFORE_MS = 5000;

export function describeGap(gap: { from: number; to: number }, ops: readonly GapOperation[]): string {
  const inside = (o: GapOperation) => {
    const at = Date.parse(o.startedAt);
    return at >= gap.from - BEFORE_MS && at <= gap.to;
  };
  if (ops.some((o) => o.kind === 'restore' && inside(o))) return 'sandbox restored from a checkpoint (the desktop restarted)';
  if (ops.some((o) => o.kind === 'fork' && inside(o))) return 'sandbox forked (the desktop restarted)';
  if (ops.some((o) => (o.kind === 'start' || o.kind === 'stop') && inside(o))) return 'sandbox stopped or restarted';
  if (ops.some((o) => o.kind === 'desktop-start' && inside(o))) return 'desktop not running (stopped, then started again)';
  return 'not recorded (the desktop was stopped or not recorded)';
}
