import { describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { KILL_TREE_SCRIPT } from './wrapper-script.js';

/** Pids of live (not zombie) processes whose argv[0] starts with this test's own marker (set by `exec -a`). */
function withMarker(marker: string): number[] {
  const pids: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (!readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0')[0]!.startsWith(marker)) continue;
      if (/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${d}/stat`, 'utf8'))) continue;
      pids.push(Number(d));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}

describe('KILL_TREE_SCRIPT (run by local bash)', () => {
  it('kills a child forked after the first walk, by a parent that ignores TERM (issue 12)', async () => {
    const marker = `sd-kill-${randomBytes(6).toString('hex')}`;
    // The parent ignores TERM (so it outlives the TERM) and forks a TERM-ignoring child 0.3 s later:
    // after the first walk, during the grace.
    const tree = spawn(
      'bash',
      [
        '-c',
        `trap '' TERM; (sleep 0.3; (exec -a ${marker}-late bash -c "trap '' TERM; while :; do sleep 0.05; done") & wait) & exec -a ${marker}-parent bash -c "trap '' TERM; while :; do sleep 0.05; done"`,
      ],
      { stdio: 'ignore' },
    );
    try {
      await new Promise((r) => setTimeout(r, 100));
      expect(withMarker(`${marker}-parent`).length).toBe(1);
      const r = spawnSync('bash', ['-c', KILL_TREE_SCRIPT, 'sd', String(tree.pid), '1'], { encoding: 'utf8', timeout: 10_000 });
      expect(r.status).toBe(0);
      await new Promise((res) => setTimeout(res, 400));
      expect(withMarker(marker)).toEqual([]);
    } finally {
      for (const p of withMarker(marker)) process.kill(p, 'SIGKILL');
      tree.kill('SIGKILL');
    }
  });

  it('leaves the root alone when asked for its descendants only', async () => {
    const marker = `sd-kill-${randomBytes(6).toString('hex')}`;
    const tree = spawn('bash', ['-c', `(exec -a ${marker}-child sleep 30) & wait`], { stdio: 'ignore' });
    try {
      await new Promise((r) => setTimeout(r, 100));
      spawnSync('bash', ['-c', KILL_TREE_SCRIPT, 'sd', String(tree.pid), '0'], { timeout: 10_000 });
      expect(withMarker(`${marker}-child`)).toEqual([]);
      expect(existsSync(`/proc/${tree.pid}`)).toBe(true);
    } finally {
      tree.kill('SIGKILL');
    }
  });
});
