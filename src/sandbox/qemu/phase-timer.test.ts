import { describe, expect, it } from 'vitest';
import { PhaseTimer } from './phase-timer.js';

describe('PhaseTimer', () => {
  it('each mark ends the phase since the previous one; a repeated phase is summed, in first-run order', () => {
    const times = [1000, 1100, 1600, 1650, 2650, 2700];
    const t = new PhaseTimer(() => times.shift()!);
    t.mark('disk'); // 100
    t.mark('ssh-connect'); // 500
    t.mark('identity'); // 50
    t.mark('ssh-connect'); // 1000 (a retry)
    t.mark('clock'); // 50
    expect(t.totals()).toEqual({ disk: 100, 'ssh-connect': 1500, identity: 50, clock: 50 });
    expect(Object.keys(t.totals())).toEqual(['disk', 'ssh-connect', 'identity', 'clock']);
    expect(t.summary()).toBe('disk 0.1 s, ssh-connect 1.5 s, identity 0.1 s, clock 0.1 s');
  });
});
