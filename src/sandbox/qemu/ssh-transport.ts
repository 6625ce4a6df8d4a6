import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { runArgv } from '../run-argv.js';
import { shellQuote } from '../shell-quote.js';

/** How to reach a VM's sshd through its forwarded loopback port, with the VM's own pinned host key. */
export interface SshTarget {
  port: number;
  /** The account our key logs in as (the seed's user). */
  loginUser: string;
  key: string;
  knownHosts: string;
  hostKeyAlias: string;
  controlPath: string;
}

/**
 * The key exchanges offered, fastest for the guest first. OpenSSH 9's default, the post-quantum hybrid
 * sntrup761x25519, costs the guest's sshd most of a handshake's crypto under TCG (measured on a restored
 * debian-test: kex 0.6 s against 0.1 s for curve25519 on a loaded host). The connection never leaves
 * the host (loopback to QEMU's forward), so there is no recorded traffic for a future quantum computer
 * to decrypt. The rest are OpenSSH's other defaults (every client since 7.4 knows each name), for
 * guests without curve25519.
 */
export const KEX_ALGORITHMS = [
  'curve25519-sha256',
  'curve25519-sha256@libssh.org',
  'ecdh-sha2-nistp256',
  'ecdh-sha2-nistp384',
  'ecdh-sha2-nistp521',
  'diffie-hellman-group-exchange-sha256',
  'diffie-hellman-group16-sha512',
  'diffie-hellman-group18-sha512',
  'diffie-hellman-group14-sha256',
].join(',');

/**
 * Options every ssh call shares. The host key is checked strictly against the VM's own known_hosts,
 * under an alias, so the pin survives the port changing between boots. `-F /dev/null` keeps the user's
 * ~/.ssh/config (ProxyJump, other keys) out of a connection that only ever goes to our loopback port.
 */
export function sshOptions(t: SshTarget): string[] {
  return [
    '-F',
    '/dev/null',
    '-i',
    t.key,
    '-p',
    String(t.port),
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'BatchMode=yes',
    '-o',
    'StrictHostKeyChecking=yes',
    '-o',
    `UserKnownHostsFile=${t.knownHosts}`,
    '-o',
    `HostKeyAlias=${t.hostKeyAlias}`,
    '-o',
    `KexAlgorithms=${KEX_ALGORITHMS}`,
    '-o',
    'ConnectTimeout=10',
    '-o',
    'ServerAliveInterval=15',
    '-o',
    'LogLevel=ERROR',
  ];
}

const host = (t: SshTarget): string => `${t.loginUser}@127.0.0.1`;

/**
 * The exec prefix: `-T` for byte streams, `-tt` for terminals, multiplexed over the VM's master
 * connection when it is up (`ControlMaster=no`: a client never becomes a master itself, so no
 * background process ever holds a command's stdout open). Another user is reached with sudo, which
 * the seed grants the login user; the name is quoted because ssh joins the remote words into a line.
 */
export function sshExecPrefix(t: SshTarget, opts: { user?: string | undefined; interactive: boolean }): string[] {
  const argv = [
    'ssh',
    ...sshOptions(t),
    '-o',
    'ControlMaster=no',
    '-o',
    `ControlPath=${t.controlPath}`,
    opts.interactive ? '-tt' : '-T',
    host(t),
  ];
  if (opts.user && opts.user !== t.loginUser) argv.push('sudo', '-n', '-H', '-u', shellQuote(opts.user), '--');
  return argv;
}

/** One probe connection, outside the multiplexer, that runs `words` and reports what happened. */
export function sshProbe(t: SshTarget, remoteCommand: string, timeoutMs: number) {
  return runArgv(['ssh', ...sshOptions(t), '-o', 'ControlPath=none', '-o', 'ConnectTimeout=5', '-T', host(t), remoteCommand], {
    timeoutMs,
  });
}

/** Whether ssh failed because the VM presented a host key other than the pinned one. */
export function isHostKeyMismatch(stderr: string): boolean {
  return /REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification failed/i.test(stderr);
}

/**
 * The master connection: in the background (`-f`), no command (`-N`), lingering 10 min. ControlMaster=yes
 * alone makes it a master — never together with `-M`, which ssh reads as "once more" and turns into
 * ControlMaster=ask: every client's session is then refused ("Master refused session request:
 * Permission denied", the first line a QEMU terminal showed) and each client quietly opens a
 * connection of its own instead.
 */
export function masterArgv(t: SshTarget): string[] {
  return [
    'ssh',
    ...sshOptions(t),
    '-o',
    'ControlMaster=yes',
    '-o',
    `ControlPath=${t.controlPath}`,
    '-o',
    'ControlPersist=600',
    '-N',
    '-f',
    host(t),
  ];
}

/** Starts the master connection unless one answers; it lingers (ControlPersist) so later commands are fast. */
export async function ensureMaster(t: SshTarget): Promise<boolean> {
  if (await masterAlive(t)) return true;
  return (await openMaster(t)).ok;
}

/** Whether the master connection answers on its control socket (a local question: no SSH handshake). */
export async function masterAlive(t: SshTarget): Promise<boolean> {
  const check = await runArgv(['ssh', ...sshOptions(t), '-o', `ControlPath=${t.controlPath}`, '-O', 'check', host(t)], {
    timeoutMs: 10_000,
  });
  return check.code === 0;
}

/**
 * Starts the master connection once (no check for one first). With `logFile`, ssh writes its errors
 * there (`-E`) and they are returned: a restore tells "not up yet" from "wrong host key" with them.
 * stdio is ignored either way: the backgrounded master must hold none of our pipes.
 */
export function openMaster(t: SshTarget, logFile?: string, timeoutMs = 20_000): Promise<{ ok: boolean; log: string }> {
  if (logFile) rmSync(logFile, { force: true });
  const [bin, ...args] = masterArgv(t);
  const argv = logFile ? ['-E', logFile, ...args] : args;
  return new Promise((resolve) => {
    const child = spawn(bin!, argv, { stdio: 'ignore', detached: true });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const done = (ok: boolean): void => {
      clearTimeout(timer);
      let log = '';
      try {
        if (logFile) log = readFileSync(logFile, 'utf8');
      } catch {
        // nothing logged
      }
      resolve({ ok, log });
    };
    child.on('error', () => done(false));
    child.on('exit', (code) => done(code === 0));
    child.unref();
  });
}

/** Closes the master connection (when the VM stops or is removed). */
export async function closeMaster(t: SshTarget): Promise<void> {
  await runArgv(['ssh', ...sshOptions(t), '-o', `ControlPath=${t.controlPath}`, '-O', 'exit', host(t)], { timeoutMs: 5_000 });
}
