import { execFileSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { runArgv } from './run-argv.js';

/** Prints `é` (0xc3 0xa9) as two writes far enough apart to arrive as two chunks. */
const SPLIT_CHAR = "printf 'a\\303'; sleep 0.2; printf '\\251b'";

describe('runArgv', () => {
  it('keeps a UTF-8 character split across chunks whole, on stdout and stderr (issue 12)', async () => {
    const r = await runArgv(['bash', '-c', `${SPLIT_CHAR}; { ${SPLIT_CHAR}; } >&2`]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('aéb');
    expect(r.stderr).toBe('aéb');
  });

  it('reports a program that cannot be started', async () => {
    const r = await runArgv(['/nonexistent/sd-no-such-program']);
    expect(r.code).toBeNull();
    expect(r.stderr).toContain('ENOENT');
  });
});

describe('runArgv when another process holds the output pipes', () => {
  // A background child inherits stdout, as an ssh ControlMaster holds a killed client's descriptors.
  const marker = `${29 + Math.random()}`.slice(0, 12);
  const holders = (): string[] =>
    execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.includes(`sleep ${marker}`));
  afterAll(() => {
    for (const l of holders()) process.kill(Number(l.trim().split(' ')[0]), 'SIGKILL');
  });

  it('a timed-out run returns at once, not when the holder lets go', async () => {
    const t0 = Date.now();
    // 2 s, not less: under a loaded CI a shorter timeout fired before bash had printed or forked (seen at 300 ms).
    // The bound that matters is far below the holder's ~29 s.
    const r = await runArgv(['bash', '-c', `echo before; sleep ${marker} & sleep ${marker}`], { timeoutMs: 2_000 });
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(r.code).toBeNull();
    expect(r.stdout).toBe('before\n');
    expect(holders().length).toBeGreaterThan(0); // the holder still runs: it was the pipe, not the process, that waited
  });

  it('a run that exited returns after a short grace with its output and exit code', async () => {
    const t0 = Date.now();
    const r = await runArgv(['bash', '-c', `sleep ${marker} & echo done; exit 3`]);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(r).toEqual({ code: 3, stdout: 'done\n', stderr: '' });
  });

  it('output still coming after the exit is waited for (each piece gives another grace)', async () => {
    const r = await runArgv(['bash', '-c', '(for i in 1 2 3; do sleep 1.5; echo $i; done) & exit 0']);
    expect(r).toEqual({ code: 0, stdout: '1\n2\n3\n', stderr: '' });
    // 4.5 s of sleeps: vitest's 5 s default left no room for a loaded machine (a clean-clone run failed on it).
  }, 20_000);
});
