import { describe, expect, it } from 'vitest';
import { BackendTimeout, withDeadline } from './backend-timeout.js';

describe('withDeadline', () => {
  it('passes an answer in time through', async () => {
    await expect(withDeadline(Promise.resolve(7), 1000, () => undefined)).resolves.toBe(7);
  });

  it('gives up at the deadline and hands the late answer to `late`', async () => {
    let release!: (v: number) => void;
    const slow = new Promise<number>((r) => (release = r));
    let resolveLate!: (v: { value?: number }) => void;
    const late = new Promise<{ value?: number }>((r) => (resolveLate = r));
    await expect(withDeadline(slow, 20, resolveLate)).rejects.toBeInstanceOf(BackendTimeout);
    release(42);
    expect(await late).toEqual({ value: 42 });
  });

  it('a failure in time is that failure, not a timeout', async () => {
    await expect(withDeadline(Promise.reject(new Error('engine down')), 1000, () => undefined)).rejects.toThrow('engine down');
  });
});
