import { describe, expect, it } from 'vitest';
import { runMain } from '../../test/run-cli-main.js';
import { shellWord } from './usage-errors.js';

describe('usage errors: the error first, then what to do, on one line', () => {
  it('a missing argument: the error, then the --help of that command', async () => {
    const r = await runMain(['sandbox', 'create']);
    expect(r.code).toBe(125);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe("sandbox-desk: missing required argument 'name' — run `sandbox-desk sandbox create --help` for usage\n");
  });

  it('an unknown command: did you mean the nearest one (named once, not with its alias)', async () => {
    const r = await runMain(['sandbox', 'lst']);
    expect(r.stderr).toBe("sandbox-desk: unknown command 'lst' — did you mean list? (run `sandbox-desk sandbox --help` for usage)\n");
    const top = await runMain(['sandbx', 'list']);
    expect(top.stderr).toBe("sandbox-desk: unknown command 'sandbx' — did you mean sandbox? (run `sandbox-desk --help` for usage)\n");
  });

  it('an unknown option: the nearest option of that command', async () => {
    const r = await runMain(['sandbox', 'create', 'x', '--backnd', 'docker']);
    expect(r.stderr).toBe(
      "sandbox-desk: unknown option '--backnd' — did you mean --backend? (run `sandbox-desk sandbox create --help` for usage)\n",
    );
  });

  it('exec NAME ls -la: says the command goes after --, and shows the line to type', async () => {
    const r = await runMain(['exec', 'box', 'ls', '-la']);
    expect(r.code).toBe(125);
    expect(r.stderr).toMatch(/^sandbox-desk: unknown option '-la' — the command goes after --/);
    expect(r.stderr).toContain('sandbox-desk exec box -- ls -la');
    const own = await runMain(['exec', 'box', '--session', 'a', 'grep', '-r', 'two words']);
    expect(own.stderr).toContain("sandbox-desk exec box --session a -- grep -r 'two words'");
  });

  it('with --json the same message and hint are the JSON error', async () => {
    const r = await runMain(['sandbox', 'lst', '--json']);
    expect(JSON.parse(r.stdout)).toEqual({
      error: {
        code: 'invalid_input',
        message: "unknown command 'lst'",
        hint: 'did you mean list? (run `sandbox-desk sandbox --help` for usage)',
      },
    });
    expect(r.stderr).toBe('');
  });

  it('prints no "(run with --help for usage)" line of its own before the error', async () => {
    const r = await runMain(['sandbox', 'create']);
    expect(r.stderr.split('\n')[0]).toMatch(/^sandbox-desk: /);
  });
});

describe('shellWord', () => {
  it.each([
    ['ls', 'ls'],
    ['-la', '-la'],
    ['/tmp/x', '/tmp/x'],
    ['two words', "'two words'"],
    ["it's", "'it'\\''s'"],
    ['a;b', "'a;b'"],
  ])('%s → %s', (w, typed) => {
    expect(shellWord(w)).toBe(typed);
  });
});
