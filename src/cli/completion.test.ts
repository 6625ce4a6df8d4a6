import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMain } from '../../test/run-cli-main.js';
import { newSandboxRecord } from '../api/sandbox-info.js';
import { Store } from '../store/store.js';
import { completionScript, SHELLS, storedSandboxNames } from './completion.js';

describe('__complete', () => {
  let home: string;
  beforeAll(() => {
    home = mkdtempSync(join(tmpdir(), 'sdesk-complete-'));
    const store = Store.open(home);
    for (const name of ['vm1', 'web', 'worker'])
      store.sandboxes.insert(newSandboxRecord({ name, backend: 'docker', declaredDefaultCwd: null, mounts: [], env: {}, options: {} }));
    store.close();
  });
  afterAll(() => rmSync(home, { recursive: true, force: true }));
  const complete = async (...words: string[]): Promise<string[]> => {
    const r = await runMain(['__complete', '--', ...words], home);
    expect(r.code, r.stderr).toBe(0);
    return r.stdout.split('\n').filter(Boolean);
  };

  it('top-level commands, without the hidden __complete', async () => {
    const all = await complete('');
    expect(all).toEqual(expect.arrayContaining(['sandbox', 'exec', 'desktop', 'session', 'completion']));
    expect(all).not.toContain('__complete');
    expect(await complete('se')).toEqual(['serve', 'session', 'service']);
  });

  it('subcommands, and sandbox names where a sandbox is expected (read from the store, no core opened)', async () => {
    expect(await complete('sandbox', '')).toEqual([
      'create',
      'list',
      'inspect',
      'start',
      'stop',
      'rm',
      'checkpoint',
      'restore',
      'fork',
      'pause',
      'resume',
      'network',
    ]);
    expect(await complete('sandbox', 'inspect', 'w')).toEqual(['web', 'worker']);
    expect(await complete('sandbox', 'ls', '')).toEqual([]);
    expect(await complete('exec', '')).toEqual(['vm1', 'web', 'worker']);
    expect(await complete('desktop', 'click', 'v')).toEqual(['vm1']);
    expect(await complete('sandbox', 'rm', '--force', '')).toEqual(['vm1', 'web', 'worker']);
  });

  it('options of the command and the global ones, and values of the options that have a fixed set', async () => {
    const flags = await complete('sandbox', 'create', 'x', '--');
    expect(flags).toEqual(expect.arrayContaining(['--backend', '--image', '--default-cwd', '--plugin', '--help']));
    expect(await complete('sandbox', 'create', 'x', '--backend', '')).toEqual(['local', 'docker', 'qemu']);
    expect(await complete('sandbox', 'create', 'x', '--accel', 't')).toEqual(['tcg']);
    expect(await complete('token', 'create', '--sandbox', 'we')).toEqual(['web']);
    expect(await complete('config', 'get', 'log.l')).toEqual(['log.level']);
    expect(await complete('completion', '')).toEqual(['bash', 'zsh', 'fish']);
  });

  it("nothing after exec's -- (those words are the sandbox command's)", async () => {
    expect(await complete('exec', 'web', '--', '')).toEqual([]);
  });

  it('no store yet: no names, and none is created', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'sdesk-complete-empty-'));
    try {
      expect(storedSandboxNames(empty)).toEqual([]);
      const r = await runMain(['__complete', '--', 'exec', ''], empty);
      expect(r.stdout).toBe('');
      expect(storedSandboxNames(empty)).toEqual([]);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe('completion SHELL', () => {
  it.each(SHELLS)('%s: the script asks `sandbox-desk __complete --` for the words', async (shell) => {
    const r = await runMain(['completion', shell]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(completionScript(shell));
    expect(r.stdout).toContain('sandbox-desk __complete --');
  });

  it('bash: registered for sandbox-desk, falling back to file names', () => {
    expect(completionScript('bash')).toMatch(/^complete -o default -F _sandbox_desk sandbox-desk$/m);
    expect(completionScript('bash')).toContain('"${COMP_WORDS[@]:1:COMP_CWORD}"');
  });

  it('zsh: a #compdef file that also works when sourced', () => {
    const s = completionScript('zsh');
    expect(s.startsWith('#compdef sandbox-desk\n')).toBe(true);
    expect(s).toContain('"${(@)words[2,CURRENT]}"');
    expect(s).toContain('compdef _sandbox_desk sandbox-desk');
  });

  it('fish: completes from the words before the cursor and the current token', () => {
    const s = completionScript('fish');
    expect(s).toContain('(commandline -opc) (commandline -ct)');
    expect(s).toContain("complete -c sandbox-desk -f -a '(___sandbox_desk_complete)'");
  });

  it('an unknown shell: what was wrong and which shells there are', async () => {
    const r = await runMain(['completion', 'tcsh']);
    expect(r.code).toBe(125);
    expect(r.stderr).toBe("sandbox-desk: no completion for the shell 'tcsh' — completion is there for: bash, zsh, fish\n");
  });
});
