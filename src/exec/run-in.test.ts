import { describe, expect, it } from 'vitest';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { runIn } from './run-in.js';

/** A sandbox boundary faked as the local machine: the exec prefix is `env`, so words run here. */
const local = { execPrefix: () => ['env'], joinsArgv: false } as unknown as SandboxEnvironment;

describe('runIn', () => {
  it('keeps a UTF-8 character split across chunks whole on stderr (issue 12)', async () => {
    const r = await runIn(local, [
      'bash',
      '-c',
      "printf 'a\\303' >&2; sleep 0.2; printf '\\251b' >&2; printf 'x\\303'; sleep 0.2; printf '\\251'",
    ]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('aéb');
    expect(r.stdout.toString('utf8')).toBe('xé');
  });
});
