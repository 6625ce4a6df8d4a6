import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { runMain } from '../../test/run-cli-main.js';
import { addStandardAliases } from './command-aliases.js';

describe('ls / remove aliases', () => {
  it('every list gets ls and every rm gets remove, at any depth, new commands alike', () => {
    const p = new Command('x');
    const checkpoint = p.command('checkpoint');
    checkpoint.command('list');
    checkpoint.command('rm <id>');
    addStandardAliases(p);
    expect(checkpoint.commands.map((c) => [c.name(), c.aliases()])).toEqual([
      ['list', ['ls']],
      ['rm', ['remove']],
    ]);
  });

  it('never takes a word a sibling already uses', () => {
    const p = new Command('x');
    p.command('list');
    p.command('ls');
    addStandardAliases(p);
    expect(p.commands[0]!.aliases()).toEqual([]);
  });

  it('the real CLI accepts sandbox ls, session ls, token ls, plugin ls, config ls', async () => {
    const r = await runMain(['sandbox', '--help']);
    expect(r.stdout).toMatch(/list\|ls /);
    expect(r.stdout).toMatch(/rm\|remove /);
    for (const group of ['session', 'token', 'plugin', 'config']) {
      expect((await runMain([group, '--help'])).stdout, group).toMatch(/list\|ls /);
    }
  });
});
