import { describe, expect, it } from 'vitest';
import { UpdateWaiters } from './update-waiters.js';

describe('UpdateWaiters', () => {
  it('answers a waiter only with an update numbered after the one in progress when it asked', async () => {
    const waiters = new UpdateWaiters();
    let done = false;
    const waiting = waiters.wait(3, 1000).then(() => (done = true));
    expect(waiters.updateDone(3, true)).toBe(false);
    await new Promise((r) => setImmediate(r));
    expect(done).toBe(false);
    waiters.updateDone(4, true);
    await waiting;
  });

  it('asks for another request when a due update carried no pixels', async () => {
    const waiters = new UpdateWaiters();
    const waiting = waiters.wait(0, 1000);
    expect(waiters.updateDone(1, false)).toBe(true); // layout only: still waiting, ask again
    expect(waiters.updateDone(2, true)).toBe(false);
    await waiting;
    expect(waiters.updateDone(3, false)).toBe(false); // nobody waits any more
  });

  it('times out with a clear message, and rejectAll rejects the rest', async () => {
    const waiters = new UpdateWaiters();
    await expect(waiters.wait(0, 10)).rejects.toThrow('no FramebufferUpdate from the RFB server within 10 ms');
    const pending = waiters.wait(0, 1000);
    waiters.rejectAll(new Error('RFB client is closed'));
    await expect(pending).rejects.toThrow('RFB client is closed');
  });
});
