/**
 * Bash reads ~/.bashrc even for `bash -c` when it guesses that rshd started it: its stdin is a socket
 * (which is how Node passes a child its pipes) and it is a top-level shell (SHLVL unset or 0). So whether
 * the app's own scripts, and a local sandbox's commands, ran the person's ~/.bashrc would depend on how
 * the app was started — from a terminal, no; from a desktop launcher or a service manager, yes: slower
 * by whatever the rc does, and hung for as long as it hangs (pyenv's rehash waits a minute on a lock a
 * killed shell left). SHLVL ≥ 1 tells every bash the process starts that it is not top-level. Sandboxes
 * behind docker or ssh do not see it: neither passes the host's environment in.
 */
export function ensureNestedShellLevel(env: NodeJS.ProcessEnv): void {
  if (!(Number(env.SHLVL) >= 1)) env.SHLVL = '1';
}
