import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';

/**
 * Gives the local login shells a test file starts a home of their own, empty, for the file's duration.
 *
 * The local backend runs `bash -l` as the app's user, so without this a test would run the host user's
 * ~/.profile and ~/.bashrc — the machine's state, not the test's. On these machines ~/.bashrc runs
 * `pyenv init`, whose rehash takes a lock file: a shell a test ends mid-rehash leaves the lock behind,
 * and every later login shell on the machine then waits up to a minute for it (CI failed 15 terminal
 * tests that way). HOME is put back when the file's tests end. (A `bash -c` reads ~/.bashrc too when it
 * guesses rshd started it; vitest.config.ts stops that for every test.)
 */
export function useHermeticHome(): () => string {
  let saved: string | undefined;
  let dir = '';
  beforeAll(() => {
    saved = process.env.HOME;
    dir = mkdtempSync(join(tmpdir(), 'sdesk-home-'));
    process.env.HOME = dir;
  });
  afterAll(() => {
    if (saved === undefined) delete process.env.HOME;
    else process.env.HOME = saved;
    rmSync(dir, { recursive: true, force: true });
  });
  return () => dir;
}
