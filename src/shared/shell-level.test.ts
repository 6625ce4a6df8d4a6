import { spawnSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useHermeticHome } from '../../test/hermetic-home.js';
import { ensureNestedShellLevel } from './shell-level.js';

describe('ensureNestedShellLevel', () => {
  const home = useHermeticHome();

  /** Runs `bash -c true` as Node runs the app's scripts (pipes: a socket for stdin); did it read ~/.bashrc? */
  const readsRc = (env: NodeJS.ProcessEnv): boolean => {
    const mark = join(home(), 'read');
    rmSync(mark, { force: true });
    writeFileSync(join(home(), '.bashrc'), 'echo x > "$HOME/read"\n');
    const r = spawnSync('bash', ['-c', 'true'], { env, stdio: ['pipe', 'pipe', 'pipe'], timeout: 10_000 });
    expect(r.status).toBe(0);
    return existsSync(mark);
  };

  it('a top-level bash -c reads ~/.bashrc (the guess it stops); after it, none does', () => {
    for (const level of [undefined, '0', '', 'x']) {
      const env: NodeJS.ProcessEnv = { ...process.env, SHLVL: level };
      if (level === undefined) delete env.SHLVL;
      expect(readsRc(env), `SHLVL ${level}`).toBe(true);
      ensureNestedShellLevel(env);
      expect(env.SHLVL).toBe('1');
      expect(readsRc(env), `SHLVL ${level}, then ensured`).toBe(false);
    }
  });

  it('holds vitest.config.ts: a bash -c a test starts reads no ~/.bashrc', () => {
    expect(Number(process.env.SHLVL)).toBeGreaterThanOrEqual(1);
    expect(readsRc(process.env)).toBe(false);
  });

  it('keeps a level that is already nested', () => {
    for (const level of ['1', '3']) {
      const env: NodeJS.ProcessEnv = { SHLVL: level };
      ensureNestedShellLevel(env);
      expect(env.SHLVL).toBe(level);
    }
  });
});
