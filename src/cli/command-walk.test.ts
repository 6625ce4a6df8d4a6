import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { allCommands, longFlags, optionTakesValue, walkCommands } from './command-walk.js';

function tree(): Command {
  const p = new Command('x').option('--plugin <path>').option('--debug');
  const sb = p.command('sandbox');
  sb.command('create <name>').option('--backend <b>').option('--json');
  sb.command('list').alias('ls');
  p.command('exec <name> [command...]').option('--session <key>');
  p.command('__hidden', { hidden: true });
  return p;
}

describe('walkCommands', () => {
  it('follows names and aliases to the deepest command, skipping options and their values', () => {
    const w = walkCommands(tree(), ['--plugin', 'sandbox', 'sandbox', 'create', 'box', '--backend', 'docker']);
    expect(w.path).toEqual(['sandbox', 'create']);
    expect(w.operands).toEqual(['box']);
    expect(walkCommands(tree(), ['sandbox', 'ls']).path).toEqual(['sandbox', 'list']);
  });
  it('stops at -- and says so; a word after the first operand is never a command', () => {
    const w = walkCommands(tree(), ['exec', 'sandbox', '--session', 'a', '--', 'ls']);
    expect(w).toMatchObject({ path: ['exec'], operands: ['sandbox'], afterDashes: true });
  });
});

describe('helpers', () => {
  it('optionTakesValue: only for options with a value, never for --x=y', () => {
    const p = tree();
    expect(optionTakesValue(p, '--plugin')).toBe(true);
    expect(optionTakesValue(p, '--debug')).toBe(false);
    expect(optionTakesValue(p, '--plugin=a')).toBe(false);
  });
  it('longFlags: the command, its ancestors, and --help', () => {
    const create = tree().commands[0]!.commands[0]!;
    expect(longFlags(create)).toEqual(['--backend', '--json', '--plugin', '--debug', '--help']);
  });
  it('allCommands: every visible command with its path, hidden ones left out', () => {
    expect(allCommands(tree()).map((c) => c.path.join(' '))).toEqual(['sandbox', 'sandbox create', 'sandbox list', 'exec']);
  });
});
