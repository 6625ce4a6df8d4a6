/**
 * The ssh command lines of the plugin, as argv arrays (never shell strings). One place, so the exec
 * prefix, the control master and the probes agree on every option.
 */
export interface SshTarget {
  host: string;
  port: number;
  user: string;
  /** Private key file; null: whatever ssh would use (agent, ~/.ssh/id_*). */
  key: string | null;
  /** This sandbox's own known_hosts, holding the host key pinned at create. */
  knownHosts: string;
  /** The multiplexing socket; short, because Unix socket paths are limited to ~108 bytes. */
  controlPath: string;
}

/** Options every ssh invocation shares: no prompts ever, the pinned host key only, quiet. */
export function baseOptions(t: SshTarget): string[] {
  return [
    '-o',
    'BatchMode=yes',
    '-o',
    'StrictHostKeyChecking=yes',
    '-o',
    `UserKnownHostsFile=${t.knownHosts}`,
    '-o',
    'GlobalKnownHostsFile=none',
    '-o',
    'LogLevel=ERROR',
    '-o',
    'ConnectTimeout=10',
    '-o',
    'ServerAliveInterval=15',
    ...(t.key ? ['-o', 'IdentitiesOnly=yes', '-i', t.key] : []),
    '-o',
    `ControlPath=${t.controlPath}`,
    '-p',
    String(t.port),
    '-l',
    t.user,
  ];
}

/**
 * The exec prefix: `-T` for byte streams (no PTY, so binary RFB and session shells pass unchanged),
 * `-tt` for the terminal. `-e none` so a `~.` typed in the terminal is not eaten by ssh. The client
 * rides on the control master when it is up, and connects on its own when it is not.
 */
export function execPrefixArgv(t: SshTarget, interactive: boolean, asUser?: string): string[] {
  const argv = ['ssh', ...baseOptions(t), '-o', 'ControlMaster=no', '-e', 'none', interactive ? '-tt' : '-T', t.host];
  // ssh logs in as one account; another is reached with sudo on the far side (where that account may
  // use it without a password). The name is quoted: ssh joins the remote words into one command line.
  if (asUser && asUser !== t.user) argv.push('sudo', '-n', '-H', '-u', quoteWord(asUser), '--');
  return argv;
}

/** One word for the remote POSIX shell. */
function quoteWord(word: string): string {
  return /^[A-Za-z0-9_.-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * Starts the control master explicitly, in the background (`-f`), with no command (`-N`). Started this
 * way — not by the first client with ControlMaster=auto — the backgrounded master never inherits an
 * exec's stdout/stderr pipes, which would keep them open for ControlPersist's lifetime. ControlMaster=yes
 * without `-M`: ssh reads both together as ControlMaster=ask, and then refuses every client's session.
 */
export function masterArgv(t: SshTarget, persistSeconds: number): string[] {
  return ['ssh', ...baseOptions(t), '-o', 'ControlMaster=yes', '-o', `ControlPersist=${persistSeconds}`, '-N', '-f', t.host];
}

/** Asks the master whether it is up (`check`) or tells it to end (`exit`). */
export function controlArgv(t: SshTarget, op: 'check' | 'exit'): string[] {
  return ['ssh', ...baseOptions(t), '-O', op, t.host];
}

/** Captures the host keys to pin, over the given port. */
export function keyscanArgv(host: string, port: number): string[] {
  return ['ssh-keyscan', '-T', '10', '-p', String(port), host];
}
