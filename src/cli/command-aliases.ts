import type { Command } from 'commander';
import { allCommands } from './command-walk.js';

/**
 * The short verbs docker and limactl accept (`docker container ls`, `limactl rm`), for every command
 * named `list` or `rm` — today's and any added later — so `sandbox ls`, `session ls`, `token rm` work
 * without each command remembering to say so.
 */
const ALIASES: Record<string, string[]> = { list: ['ls'], rm: ['remove'] };

export function addStandardAliases(program: Command): void {
  for (const { cmd } of allCommands(program)) {
    const taken = new Set((cmd.parent?.commands ?? []).flatMap((c) => [c.name(), ...c.aliases()]));
    for (const alias of ALIASES[cmd.name()] ?? []) if (!taken.has(alias)) cmd.alias(alias);
  }
}
