import { describe, expect, it } from 'vitest';
import { IdleExit, idleExitMs } from './idle-exit.js';

const idle = { runningSandboxes: 0, clients: 0, recordings: 0 };

describe('IdleExit', () => {
  it('exits only after the whole delay idle in a row', () => {
    const x = new IdleExit(10_000);
    expect(x.observe(idle, 0)).toBe(false);
    expect(x.observe(idle, 9_999)).toBe(false);
    expect(x.observe(idle, 10_000)).toBe(true);
  });

  it('a client, a running sandbox or a recording resets the count', () => {
    for (const busy of [{ clients: 1 }, { runningSandboxes: 1 }, { recordings: 1 }]) {
      const x = new IdleExit(10_000);
      x.observe(idle, 0);
      expect(x.observe({ ...idle, ...busy }, 8_000)).toBe(false);
      expect(x.observe(idle, 12_000)).toBe(false);
      expect(x.observe(idle, 21_999)).toBe(false);
      expect(x.observe(idle, 22_000)).toBe(true);
    }
  });

  it('polls at most every 2 s, and often enough for a short delay', () => {
    expect(new IdleExit(600_000).pollMs).toBe(2000);
    expect(new IdleExit(2_000).pollMs).toBe(500);
  });

  it('the env var (tests) overrides the config; a bad one says what was wrong', () => {
    expect(idleExitMs({}, 600)).toBe(600_000);
    expect(idleExitMs({ SANDBOX_DESK_SERVICE_IDLE_SECONDS: '2' }, 600)).toBe(2000);
    expect(() => idleExitMs({ SANDBOX_DESK_SERVICE_IDLE_SECONDS: 'soon' }, 600)).toThrow(/positive number of seconds, got "soon"/);
  });
});
