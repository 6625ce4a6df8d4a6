import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SandboxDeskError } from '../../shared/errors.js';
import { networkDir, socketDirOf, SOCKET_NAME } from './network-files.js';
import { pumpBinary, PUMP_MISSING } from './egress-pump.js';

/** The pid of the data directory's egress proxy when it runs, else null. */
export function proxyPid(dataDir: string): number | null {
  try {
    const pid = Number(readFileSync(join(networkDir(dataDir), 'proxy.pid'), 'utf8').trim());
    if (!(pid > 0)) return null;
    process.kill(pid, 0);
    return pid;
  } catch {
    return null;
  }
}

/** util-linux's setpriv (Debian: util-linux, which `npm run setup` installs). */
const SETPRIV = '/usr/bin/setpriv';

/**
 * The daemon's command with no more privileges than its pump needs (issue 35, item 13): no_new_privs, and
 * (as root) a bounding set of the four capabilities the pump's lookup helper keeps plus CAP_SETPCAP, with
 * which the pump empties its own bounding set. Why not none at all: the pump gets its capabilities from
 * the daemon (root's execve grants at most the bounding set, and no_new_privs at most what the daemon
 * had), so the daemon must hold the helper's. Without setpriv, the command as it is.
 */
export function confined(argv: readonly string[]): string[] {
  if (!existsSync(SETPRIV)) return [...argv];
  const root = process.getuid?.() === 0;
  const caps = root ? ['--inh-caps=-all', '--bounding-set=-all,+sys_admin,+net_admin,+sys_ptrace,+dac_read_search,+setpcap'] : [];
  return [SETPRIV, '--no-new-privs', ...caps, '--', ...argv];
}

/** Starts the data directory's egress proxy, detached (it outlives this process); a second one exits at once (its lock). */
function startDaemon(dataDir: string): void {
  mkdirSync(networkDir(dataDir), { recursive: true, mode: 0o700 });
  const fromSource = import.meta.url.endsWith('.ts');
  const script = fileURLToPath(new URL(fromSource ? './proxy-daemon.ts' : './proxy-daemon.js', import.meta.url));
  const out = openSync(join(networkDir(dataDir), 'proxy.log'), 'a');
  const [cmd, ...args] = confined([process.execPath, ...(fromSource ? ['--import', 'tsx'] : []), script, dataDir]);
  const child = spawn(cmd!, args, {
    detached: true,
    stdio: ['ignore', out, out],
    // Inside Electron, process.execPath is the Electron binary: make it behave as plain Node.
    env: { ...process.env, ELECTRON_RUN_AS_NODE: '1', SANDBOX_DESK_PROXY_DAEMON: '1' },
  });
  closeSync(out);
  child.unref();
}

/** How long a started proxy is given to take its lock before it is started again (it exited meanwhile). */
const RESTART_AFTER_MS = 3_000;

/**
 * Makes sure the data directory's egress proxy runs and serves `sandboxes` (their policies must already
 * be in policies.json). Starts it detached when it does not run (it outlives this process). Returns
 * whether it had to start it. Waits for the sockets, so a sandbox started right after can connect;
 * fails with `backend_unavailable` rather than hang.
 */
export async function ensureProxy(
  dataDir: string,
  sandboxes: readonly string[],
  timeoutMs = 15_000,
): Promise<{ started: boolean; pid: number }> {
  let started = false;
  // Without its data path the proxy could serve nothing: said now, not as a timeout.
  if (!pumpBinary()) throw new SandboxDeskError('backend_unavailable', PUMP_MISSING);
  let startedAt = 0;
  if (proxyPid(dataDir) === null) {
    startDaemon(dataDir);
    started = true;
    startedAt = Date.now();
  }
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let pid = proxyPid(dataDir);
    // It exits on its own once no sandbox needs it: one found exiting (gone before it served these) is started again.
    if (pid === null && Date.now() - startedAt > RESTART_AFTER_MS) {
      startDaemon(dataDir);
      started = true;
      startedAt = Date.now();
      pid = proxyPid(dataDir);
    }
    const ready = sandboxes.every((s) => existsSync(join(socketDirOf(dataDir, s), SOCKET_NAME)));
    if (pid !== null && ready) return { started, pid };
    if (Date.now() > deadline)
      throw new SandboxDeskError('backend_unavailable', 'the egress proxy did not start', {
        hint: `see ${join(networkDir(dataDir), 'proxy.log')}`,
      });
    await new Promise((r) => setTimeout(r, 100));
  }
}
