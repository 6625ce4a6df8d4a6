import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { processAlive } from './process-alive.js';

describe('processAlive', () => {
  it('is true for a running process and false for one that has exited', () => {
    expect(processAlive(process.pid)).toBe(true);
    // A child of our own that has run and been reaped: its pid no longer names a process.
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    expect(processAlive(Number(gone.stdout))).toBe(false);
  });

  it('counts a process of another user as alive (EPERM)', () => {
    // pid 1 exists on every Linux machine; as root the signal is allowed, as anyone else it is EPERM.
    expect(processAlive(1)).toBe(true);
  });
});
