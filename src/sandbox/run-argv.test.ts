import { describe, expect, it } from 'vitest';
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
