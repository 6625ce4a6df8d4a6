import { describe, expect, it } from 'vitest';
import { RestartBudget } from './restart-budget.js';

describe('RestartBudget (injected clock)', () => {
  it('allows 3 restarts per 10 minutes, then refuses until the oldest leaves the window', () => {
    let now = 0;
    const b = new RestartBudget(3, 600_000, () => now);
    const takes = [0, 100, 200].map((t) => ((now = t), b.take()));
    expect(takes).toEqual([true, true, true]);
    now = 599_999;
    expect(b.take()).toBe(false);
    expect(b.used()).toBe(3);
    now = 600_050; // the first restart (t=0) has left the window; the others have not
    expect(b.take()).toBe(true);
    expect(b.take()).toBe(false);
  });
});
