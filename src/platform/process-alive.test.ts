import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { processAlive } from './process-alive.js';

describe('processAlive', () => {
  it('is true for a running process and false for one that has exited', () => {
    expect(processAlive(process.pid)).toBe(true);
    // A child of our own that has run and been reaped: its pid no longer names a process.
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    expect(processAlive(Number(gone.stdout))).toBe(false);
  });

  it('a zombie (killed, not yet reaped by its parent) is not alive: its locks and sockets are already released', async () => {
    // `sleep 0` runs as a child of a process that never waits for it: it stays a zombie until that one ends.
    const parent = spawn('bash', ['-c', 'sleep 0 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const zombie = Number(await new Promise<string>((resolve) => parent.stdout.once('data', (d: Buffer) => resolve(d.toString()))));
      await expect.poll(() => readFileSync(`/proc/${zombie}/stat`, 'utf8').split(') ')[1]?.[0], { timeout: 5000 }).toBe('Z');
      expect(processAlive(zombie)).toBe(false);
      expect(processAlive(parent.pid!)).toBe(true);
    } finally {
      parent.kill('SIGKILL');
    }
  });

  it('counts a process of another user as alive (EPERM)', () => {
    // pid 1 exists on every Linux machine; as root the signal is allowed, as anyone else it is EPERM.
    expect(processAlive(1)).toBe(true);
  });
});
