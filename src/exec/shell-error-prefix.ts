/**
 * bash names the script and its line in every error of a non-interactive shell: a failing `cd` in a
 * command reads "sandbox-desk: line 60: cd: /nope: No such file or directory", where `sandbox-desk` is
 * the wrapper's $0 and line 60 a line of the wrapper script (or "environment: line 1:" inside a
 * function the command defined). Neither means anything to the user, and bash has no setting that
 * drops them short of making the shell interactive — so they are taken off where the command's stderr
 * is collected, leaving the message the user's own: "cd: /nope: No such file or directory", as an
 * interactive shell would print it (less its "bash: ").
 *
 * Only that exact prefix at the start of a line is removed; the rest of stderr is left byte for byte.
 */
const PREFIX = /^(?:sandbox-desk|environment): line \d+: /gm;

export function withoutShellErrorPrefix(stderr: Buffer): Buffer {
  // latin1 maps every byte to one character and back, so bytes that are not UTF-8 survive unchanged.
  const text = stderr.toString('latin1');
  PREFIX.lastIndex = 0;
  if (!PREFIX.test(text)) return stderr;
  return Buffer.from(text.replace(PREFIX, ''), 'latin1');
}
