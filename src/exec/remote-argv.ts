import type { ExecPrefixOptions, SandboxEnvironment } from '../sandbox/provider.js';
import { SandboxDeskError } from '../shared/errors.js';
import { argvAfterPrefix } from '../sandbox/shell-quote.js';

/**
 * The full local argv that runs `words` inside the sandbox: the environment's prefix followed by the
 * words as separate arguments — or, for transports that join them into one remote line, as one word
 * quoted here, in this one place.
 */
export function remoteArgv(env: SandboxEnvironment, opts: ExecPrefixOptions, words: string[]): string[] {
  let prefix: unknown;
  try {
    prefix = env.execPrefix(opts);
  } catch (err) {
    // A backend's own error (a plugin's refusal, "not right now") already says what to do.
    if (err instanceof SandboxDeskError) throw err;
    throw new SandboxDeskError('backend_unavailable', `execPrefix failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (prefix === null || prefix === undefined) {
    throw new SandboxDeskError('backend_unavailable', 'the sandbox cannot run commands right now (execPrefix returned null)', {
      hint: 'retry once the sandbox is running',
    });
  }
  if (!Array.isArray(prefix) || !prefix.every((w) => typeof w === 'string')) {
    throw new SandboxDeskError('backend_unavailable', `execPrefix must return an array of strings, got ${JSON.stringify(prefix)}`, {
      hint: 'the backend is broken: return an argv array such as ["docker", "exec", "-i", id], never a command string',
    });
  }
  return [...prefix, ...argvAfterPrefix(words, env.joinsArgv)];
}
