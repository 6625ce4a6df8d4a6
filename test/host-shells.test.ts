import { spawnSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useHermeticHome } from './hermetic-home.js';

/**
 * Holds vitest.config.ts's SHLVL line: a `bash -c` a test starts reads no ~/.bashrc, though Node gives it
 * a socket for stdin (bash's sign that rshd started it). The home is this file's own, with a ~/.bashrc
 * that leaves a mark.
 */
describe("the tests' shells read none of the host's startup files", () => {
  const home = useHermeticHome();
  const bash = (env: NodeJS.ProcessEnv) => {
    const mark = join(home(), 'read');
    rmSync(mark, { force: true });
    writeFileSync(join(home(), '.bashrc'), 'echo x > "$HOME/read"\n');
    const r = spawnSync('bash', ['-c', 'true'], { env, stdio: ['pipe', 'pipe', 'pipe'], timeout: 10_000 });
    expect(r.status).toBe(0);
    return existsSync(mark);
  };

  it("`bash -c` started with the tests' environment does not read ~/.bashrc", () => {
    expect(Number(process.env.SHLVL)).toBeGreaterThanOrEqual(1);
    expect(bash(process.env)).toBe(false);
  });

  it('the same bash as a top-level shell (SHLVL 0, as under `npm test`) does: what the line above guards against', () => {
    expect(bash({ ...process.env, SHLVL: '0' })).toBe(true);
  });
});
