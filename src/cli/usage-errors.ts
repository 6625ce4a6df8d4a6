import type { Command, CommanderError } from 'commander';
import { didYouMean, nearestNames } from '../shared/did-you-mean.js';
import { SandboxDeskError } from '../shared/errors.js';
import { commandWords, longFlags, optionTakesValue, visibleSubcommands, walkCommands } from './command-walk.js';

/**
 * A commander parse error as one of Sandbox Desk's own: the error first, then what to do — a near
 * command or option ("did you mean list?", from the one did-you-mean helper), where an `exec` command
 * goes, and the `--help` to read — on the same line, like every other message.
 */
export function usageError(program: Command, argv: readonly string[], err: CommanderError): SandboxDeskError {
  const message = err.message.replace(/^error: /, '').split('\n')[0]!;
  const { cmd, path } = walkCommands(program, argv);
  const usage = `run \`${['sandbox-desk', ...path, '--help'].join(' ')}\` for usage`;
  const hints: string[] = [];
  const quoted = /'([^']*)'/.exec(message)?.[1] ?? '';
  if (err.code === 'commander.unknownCommand') {
    // An alias counts as a spelling of its command, but the suggestion names the command once.
    const byWord = new Map(visibleSubcommands(cmd).flatMap((c) => commandWords(c).map((w): [string, string] => [w, c.name()])));
    const near = [...new Set(nearestNames(quoted, byWord.keys()).map((w) => byWord.get(w)!))];
    const guess = didYouMean(near[0] ?? '', near);
    if (guess) hints.push(guess);
  } else if (err.code === 'commander.unknownOption') {
    if (cmd.name() === 'exec' && !argv.includes('--')) {
      // `exec box ls -la`: -la is the sandbox command's, not ours; the words after -- are passed as they are.
      hints.push(`the command goes after --, so that its options are not taken for sandbox-desk's: ${execAfterDashes(cmd, argv)}`);
    } else {
      const guess = didYouMean(quoted.split('=')[0]!, longFlags(cmd));
      if (guess) hints.push(guess);
    }
  }
  return new SandboxDeskError('invalid_input', message, { hint: hints.length ? `${hints.join('; ')} (${usage})` : usage });
}

/** `exec box --json ls -la` rewritten as it should have been typed: `sandbox-desk exec box --json -- ls -la`. */
function execAfterDashes(exec: Command, argv: readonly string[]): string {
  const words = argv.slice(argv.indexOf('exec') + 1);
  const own: string[] = [];
  const rest: string[] = [];
  let name: string | undefined;
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    const flag = w.split('=')[0]!;
    if (rest.length === 0 && exec.options.some((o) => o.long === flag || o.short === flag)) {
      own.push(w);
      if (optionTakesValue(exec, w) && i + 1 < words.length) own.push(words[++i]!);
    } else if (name === undefined) name = w;
    else rest.push(w);
  }
  return ['sandbox-desk', 'exec', name ?? 'NAME', ...own, '--', ...(rest.length ? rest : ['COMMAND'])].map(shellWord).join(' ');
}

/** A word as a POSIX shell would need it typed: as is when plain, else in single quotes. */
export function shellWord(w: string): string {
  return /^[\w.:@%+=,/~-]+$/.test(w) ? w : `'${w.replaceAll("'", `'\\''`)}'`;
}
