import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { runMain } from '../../test/run-cli-main.js';
import { addHelpExamples } from './help-examples.js';

/** The subcommand names a help text lists under "Commands:" (aliases and `help` left out). */
function listedCommands(help: string): string[] {
  const section = help.split('\nCommands:\n')[1]?.split('\n\n')[0] ?? '';
  return section
    .split('\n')
    .filter((l) => /^ {2}\S/.test(l))
    .map((l) => l.trim().split(/[\s|]/)[0]!)
    .filter((n) => n !== 'help');
}

describe('help examples', () => {
  it('every command of the real CLI has an example in its --help', async () => {
    const queue: string[][] = [[]];
    const seen: string[] = [];
    const without: string[] = [];
    while (queue.length) {
      const path = queue.shift()!;
      const r = await runMain([...path, '--help']);
      expect(r.code).toBe(0);
      if (path.length) {
        seen.push(path.join(' '));
        if (!/\nExamples?:\n {2}\$ sandbox-desk /.test(r.stdout)) without.push(path.join(' '));
      }
      for (const sub of listedCommands(r.stdout)) queue.push([...path, sub]);
    }
    expect(seen).toEqual(expect.arrayContaining(['sandbox create', 'exec', 'desktop click', 'completion', 'config set']));
    expect(without).toEqual([]);
  });

  it('the agent call log is `calls` (alias `log`), and each of calls/logs says the other is not it', async () => {
    const calls = await runMain(['calls', '--help']);
    expect(calls.code).toBe(0);
    expect(calls.stdout).toMatch(/Usage: sandbox-desk calls\|log/);
    expect(calls.stdout.replace(/\s+/g, ' ')).toMatch(/A sandbox's own output is `logs`/);
    const logs = await runMain(['logs', '--help']);
    expect(logs.stdout.replace(/\s+/g, ' ')).toMatch(/The agents' tool calls are `calls`/);
    // The old name still runs, as the same command.
    expect((await runMain(['log', '--help'])).stdout).toMatch(/Usage: sandbox-desk calls\|log/);
  });

  it('reports the commands that have none', () => {
    const p = new Command('x');
    p.command('a');
    p.command('b');
    expect(addHelpExamples(p, { a: ['x a'] })).toEqual(['b']);
  });

  it('sandbox create says --backend defaults to docker', async () => {
    const r = await runMain(['sandbox', 'create', '--help']);
    expect(r.stdout).toMatch(/--backend <backend>[^\n]*\n?[^\n]*\(default: "docker"\)/);
  });
});
