import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { CONFIG_KEYS } from '../platform/config.js';
import { BUILTIN_BACKENDS } from '../sandbox/registry.js';
import type { Store } from '../store/store.js';
import { longFlags, optionTakesValue, visibleSubcommands, walkCommands } from './command-walk.js';
import type { Out } from './output.js';
import { unknownNameHint } from '../shared/did-you-mean.js';
import { SandboxDeskError } from '../shared/errors.js';

/**
 * Shell completion: `sandbox-desk completion bash|zsh|fish` prints a script that asks the hidden
 * `sandbox-desk __complete -- WORDS…` for the candidates, so all three shells complete the same
 * commands, options and sandbox names from the one command tree. `__complete` reads sandbox names
 * straight from the store — no core, no plugins, no engine — so a Tab press stays fast.
 */

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

const VALUES: Record<string, readonly string[]> = {
  '--backend': BUILTIN_BACKENDS,
  '--accel': ['auto', 'kvm', 'tcg'],
  '--plugin-isolation': ['in-process', 'host'],
  '--log-level': ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'],
  '--format': ['png', 'jpeg'],
};
const SANDBOX_VALUED = new Set(['--sandbox', '--mcp-sandbox']);

/**
 * The candidates for the last of `words` (the word being typed, maybe ''), given the words before it.
 * Empty when nothing applies (the shells then offer files, or nothing).
 */
export function completeWords(program: Command, words: readonly string[], sandboxNames: () => string[]): string[] {
  const cur = words.at(-1) ?? '';
  const before = words.slice(0, -1);
  const { cmd, operands, afterDashes } = walkCommands(program, before);
  if (afterDashes) return [];
  const prev = before.at(-1);
  const starting = (xs: readonly string[]): string[] => [...new Set(xs)].filter((x) => x.startsWith(cur));
  if (prev?.startsWith('-')) {
    for (let c: Command | null = cmd; c; c = c.parent) {
      if (optionTakesValue(c, prev)) {
        if (SANDBOX_VALUED.has(prev)) return starting(sandboxNames());
        return starting(VALUES[prev] ?? []);
      }
    }
  }
  if (cur.startsWith('-')) return starting(longFlags(cmd));
  const subs = visibleSubcommands(cmd);
  if (subs.length && operands.length === 0) return starting(subs.map((c) => c.name()));
  const arg = cmd.registeredArguments[operands.length]?.name();
  if (arg === 'name' && cmd.parent?.name() !== 'plugin') return starting(sandboxNames());
  if (arg === 'key' && cmd.parent?.name() === 'config') return starting(CONFIG_KEYS);
  if (arg === 'shell') return starting(SHELLS);
  return [];
}

/** Sandbox names from the store of `dataDir`, or none when there is no store yet (never creates one). */
export function storedSandboxNames(dataDir: string, StoreClass?: typeof Store): string[] {
  if (!existsSync(join(dataDir, 'state.db'))) return [];
  // The store (SQLite, a native module) is loaded by `__complete` only, never on other commands' start path.
  if (!StoreClass) throw new Error('storedSandboxNames: give the Store class (loaded lazily by __complete)');
  const store = StoreClass.open(dataDir);
  try {
    return store.sandboxes
      .list()
      .map((r) => r.name)
      .sort();
  } finally {
    store.close();
  }
}

/** The script a shell sources; `bin` is the command the user types. */
export function completionScript(shell: Shell, bin = 'sandbox-desk'): string {
  const fn = `_${bin.replace(/\W/g, '_')}`;
  switch (shell) {
    case 'bash':
      return `# bash completion for ${bin}: source it, or save it as ~/.local/share/bash-completion/completions/${bin}
${fn}() {
  local IFS=$'\\n'
  COMPREPLY=($(${bin} __complete -- "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F ${fn} ${bin}
`;
    case 'zsh':
      return `#compdef ${bin}
# zsh completion for ${bin}: save it as _${bin} in a directory of $fpath, or source it after compinit
${fn}() {
  local -a candidates
  candidates=("\${(@f)$(${bin} __complete -- "\${(@)words[2,CURRENT]}" 2>/dev/null)}")
  candidates=(\${candidates:#})
  if (( \${#candidates} )); then
    compadd -- "\${candidates[@]}"
  else
    _files
  fi
}
if [[ "\${funcstack[1]}" == "${fn}" ]]; then
  ${fn} "$@"
else
  compdef ${fn} ${bin}
fi
`;
    case 'fish':
      return `# fish completion for ${bin}: save it as ~/.config/fish/completions/${bin}.fish
function __${fn}_complete
    set -l words (commandline -opc) (commandline -ct)
    ${bin} __complete -- $words[2..-1] 2>/dev/null
end
complete -c ${bin} -f -a '(__${fn}_complete)'
`;
  }
}

/** `completion SHELL` and the hidden `__complete`; `dataDir` is read only when names are asked for. */
export function addCompletionCommands(program: Command, out: Out, dataDir: () => string): void {
  program
    .command('completion <shell>')
    .description('print a shell completion script for bash, zsh or fish (commands, options, sandbox names)')
    .action((shell: string) => {
      if (!(SHELLS as readonly string[]).includes(shell)) {
        throw new SandboxDeskError('invalid_input', `no completion for the shell '${shell}'`, {
          hint: unknownNameHint(shell, SHELLS, 'completion is there for'),
        });
      }
      out.stdout(completionScript(shell as Shell));
    });
  program
    .command('__complete', { hidden: true })
    .argument('[words...]')
    .allowUnknownOption()
    .helpOption(false)
    .action(async (words: string[]) => {
      const { Store: StoreClass } = await import('../store/store.js');
      const found = completeWords(program, words.length ? words : [''], () => storedSandboxNames(dataDir(), StoreClass));
      if (found.length) out.stdout(found.join('\n') + '\n');
    });
}
