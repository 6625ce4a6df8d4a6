/**
 * The egress proxy as a process of its own, one per data directory: it must outlive the CLI call that
 * created a sandbox, and it must not die with a window. It serves every sandbox whose policy is `allow`
 * (policies.json), re-reading that file when it changes, and logs each connection to the sandbox's log.
 * It holds `proxy.pid` as its lock (a second one exits at once) and exits on its own, its pump with
 * it, when its data directory is gone or no sandbox needs it (none in `allow` mode) for IDLE_EXIT_MS:
 * nothing of it stays behind the last allow sandbox (issue 35). `ensureProxy` (proxy-supervisor.ts)
 * starts it, again on demand; the serving app restarts it when it dies while a sandbox needs it.
 *
 * Run as: node proxy-daemon.js DATA_DIR
 */
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeSync, appendFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { EgressProxy } from './egress-proxy.js';
import { logFileOf, networkDir, policiesFile, RELAY_SOCKET_NAME, socketDirOf, SOCKET_NAME } from './network-files.js';
import { processAlive } from '../../platform/process-alive.js';

const POLL_MS = 250;
/** Long enough to ride out a policies.json being rewritten, short enough that nothing lingers. */
const IDLE_EXIT_MS = 1_000;

/** Takes `proxy.pid` exclusively; a stale one (its process gone) is replaced. false: another proxy runs. */
export function takeLock(pidFile: string): boolean {
  for (let i = 0; i < 2; i++) {
    try {
      const fd = openSync(pidFile, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number(readFileSync(pidFile, 'utf8').trim());
      if (pid > 0 && processAlive(pid)) return false;
      rmSync(pidFile, { force: true });
    }
  }
  return false;
}

async function main(dataDir: string): Promise<void> {
  const dir = networkDir(dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const pidFile = join(dir, 'proxy.pid');
  const say = (m: string): void => {
    try {
      appendFileSync(join(dir, 'proxy.log'), `${new Date().toISOString()} [${process.pid}] ${m}\n`);
    } catch {
      // the data dir went away: the loop below notices and exits
    }
  };
  if (!takeLock(pidFile)) return;
  const proxy = new EgressProxy({ policiesFile: policiesFile(dataDir), say });
  let idleSince = Date.now();
  const cannot = new Map<string, string>();
  const sync = async (): Promise<void> => {
    // Which sandboxes to serve: the proxy's own reading of the policies (again only when the file changed).
    const policies = proxy.currentPolicies().bySandbox;
    const want = Object.entries(policies)
      .filter(([, p]) => p.mode === 'allow')
      .map(([s]) => s);
    for (const s of proxy.serving()) {
      if (want.includes(s)) continue;
      const mode = policies[s]?.mode;
      // Its open connections are closed with it, each logged with why.
      await proxy.unlisten(
        s,
        mode ? `the sandbox is ${mode === 'open' ? 'open (no longer through the proxy)' : mode}` : 'the sandbox was removed',
      );
    }
    for (const s of want) {
      const sockDir = socketDirOf(dataDir, s);
      const sock = join(sockDir, SOCKET_NAME);
      if (proxy.answering(s)) continue; // else (a socket file removed, say) it is listened again
      await proxy.unlisten(s);
      mkdirSync(sockDir, { recursive: true, mode: 0o755 });
      mkdirSync(dirname(logFileOf(dataDir, s)), { recursive: true, mode: 0o700 });
      await proxy.listen(s, { socket: sock, relay: join(sockDir, RELAY_SOCKET_NAME), log: logFileOf(dataDir, s) }).then(
        () => cannot.delete(s),
        (err: unknown) => {
          // Tried again on every sync; said once until it changes.
          const why = `cannot listen for ${s}: ${String(err)}`;
          if (cannot.get(s) !== why) say(why);
          cannot.set(s, why);
        },
      );
    }
    if (want.length > 0) idleSince = Date.now();
  };
  const shutdown = async (why: string): Promise<never> => {
    say(`exiting: ${why}`);
    await proxy.close();
    try {
      if (readFileSync(pidFile, 'utf8').trim() === String(process.pid)) rmSync(pidFile, { force: true });
    } catch {
      // already gone
    }
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  await sync();
  say(`serving ${proxy.serving().length} sandbox(es)`);
  for (;;) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    if (!existsSync(dataDir) || !existsSync(pidFile)) await shutdown('the data directory or the pid file is gone');
    await sync().catch((err: unknown) => say(`sync failed: ${String(err)}`));
    // Decided right after reading the policies: a sandbox set to allow before that read keeps it, and one
    // set after has no socket here yet, so ensureProxy waits and starts another once this one is gone.
    if (Date.now() - idleSince > IDLE_EXIT_MS) await shutdown('no sandbox needs it');
  }
}

const dataDir = process.argv[2];
if (dataDir && process.env.SANDBOX_DESK_PROXY_DAEMON === '1') void main(dataDir);
