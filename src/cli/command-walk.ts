import type { Command } from 'commander';

/** A command's name and aliases: every word that selects it. */
export function commandWords(cmd: Command): string[] {
  return [cmd.name(), ...cmd.aliases()];
}

/** The subcommand of `cmd` that `word` selects (by name or alias), if any. */
export function subcommandOf(cmd: Command, word: string): Command | undefined {
  return cmd.commands.find((c) => commandWords(c).includes(word));
}

/** Whether `flag` (`--backend`, `-x`) is an option of `cmd` that takes a value in the next word. */
export function optionTakesValue(cmd: Command, flag: string): boolean {
  if (flag.includes('=')) return false;
  const o = cmd.options.find((opt) => opt.long === flag || opt.short === flag);
  return Boolean(o && (o.required || o.optional));
}

/**
 * The deepest command the words select, as commander will pick it: option words (and the value of an
 * option that takes one) are skipped, the first word that names no subcommand ends the walk, as does `--`.
 * `operands` are the positional words after the command's name, up to `--`.
 */
export function walkCommands(
  program: Command,
  words: readonly string[],
): { cmd: Command; path: string[]; operands: string[]; afterDashes: boolean } {
  let cmd = program;
  const path: string[] = [];
  const operands: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (w === '--') return { cmd, path, operands, afterDashes: true };
    if (w.startsWith('-') && w.length > 1) {
      // Options of the command and of its ancestors (global ones) may come anywhere.
      for (let c: Command | null = cmd; c; c = c.parent) {
        if (optionTakesValue(c, w)) {
          i++;
          break;
        }
      }
      continue;
    }
    const sub = operands.length === 0 ? subcommandOf(cmd, w) : undefined;
    if (sub) {
      cmd = sub;
      path.push(sub.name());
    } else operands.push(w);
  }
  return { cmd, path, operands, afterDashes: false };
}

/** Every long option of `cmd` and its ancestors (the global options apply everywhere). */
export function longFlags(cmd: Command): string[] {
  const flags: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) {
    for (const o of c.options) if (o.long && !o.hidden) flags.push(o.long);
  }
  return [...flags, '--help'];
}

/** Every command below `root`, depth first, with its path of names (hidden ones left out). */
export function allCommands(root: Command): { cmd: Command; path: string[] }[] {
  const found: { cmd: Command; path: string[] }[] = [];
  const visit = (c: Command, path: string[]): void => {
    for (const sub of visibleSubcommands(c)) {
      const p = [...path, sub.name()];
      found.push({ cmd: sub, path: p });
      visit(sub, p);
    }
  };
  visit(root, []);
  return found;
}

/** The subcommands help lists (hidden ones and the implicit `help` left out). */
export function visibleSubcommands(cmd: Command): Command[] {
  const shown = new Set(cmd.createHelp().visibleCommands(cmd));
  return cmd.commands.filter((c) => shown.has(c));
}
