import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { cancelOnInterrupt } from './interrupt.js';

describe('cancelOnInterrupt', () => {
  it('turns the first SIGINT into an abort of the work, says so, and lets the next one through', async () => {
    const source = new EventEmitter();
    const said: string[] = [];
    const out = { stdout: () => undefined, stderr: (s: string | Buffer) => void said.push(String(s)) };
    const result = cancelOnInterrupt(
      out,
      (signal) =>
        new Promise<string>((resolve) => {
          signal.addEventListener('abort', () => resolve('aborted'));
          source.emit('SIGINT');
        }),
      source,
    );
    await expect(result).resolves.toBe('aborted');
    expect(said.join('')).toMatch(/cancelling/);
    // The handler is gone: a later Ctrl-C is the default one again (exit at once).
    expect(source.listenerCount('SIGINT')).toBe(0);
    expect(source.listenerCount('SIGTERM')).toBe(0);
  });
});
