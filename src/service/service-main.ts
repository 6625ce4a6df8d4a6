import { chmodSync, existsSync, lstatSync, mkdirSync, statSync, unlinkSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { LocalServer } from '../api/local-server.js';
import { readJsonObject } from '../api/body-reader.js';
import type { SandboxState } from '../api/contract.js';
import { SandboxDesk } from '../api/sandbox-desk.js';
import { DEFAULT_CONFIG, loadConfig, type Config } from '../platform/config.js';
import { ensureDataDir } from '../platform/data-dir.js';
import { openLog } from '../platform/log.js';
import { resolvePaths } from '../platform/paths.js';
import { SandboxDeskError } from '../shared/errors.js';
import {
  CLIENT_VERSION_HEADER,
  clientVersionTag,
  ownVersion,
  SERVICE_PROTOCOL,
  type ServiceBusy,
  type ServiceInfo,
} from '../shared/service-info.js';
import { servicePaths } from '../shared/service-paths.js';
import { ensureNestedShellLevel } from '../shared/shell-level.js';
import { adoptRunningDesktops } from './adopt-desktops.js';
import { IdleExit, idleExitMs } from './idle-exit.js';
import { relayMcp } from './mcp-relay.js';
import { relayServe } from './serve-relay.js';
import { admitSameUser, loadPeerCredAddon } from './peer-cred.js';
import { acquireServiceLock } from './service-lock.js';

/** States in which a sandbox needs its service (its shells, terminals, recordings, operations live here). */
const BUSY_STATES: ReadonlySet<SandboxState> = new Set(['running', 'creating', 'starting', 'stopping']);

export interface RunServiceOptions {
  env?: NodeJS.ProcessEnv;
  /** Where the service says what it does besides its log (default: stderr, the service log when started on demand). */
  say?: (line: string) => void;
}

/**
 * The per-user service in the foreground: one SandboxDesk for the data directory, served on a Unix
 * socket (0600, peer uid checked per connection) to every client — the CLI, `mcp`, `serve`, the window.
 * Resolves with the reason it stopped: idle, asked to stop, a signal, or its data directory removed.
 */
export async function runService(opts: RunServiceOptions = {}): Promise<string> {
  // Every bash this process starts (the app's scripts, a local sandbox's commands) skips ~/.bashrc, however
  // the service was started (shell-level.ts).
  ensureNestedShellLevel(process.env);
  const env = opts.env ?? process.env;
  const say = opts.say ?? ((line: string) => process.stderr.write(`sandbox-desk service: ${line}\n`));
  const appPaths = resolvePaths(env);
  const dataDir = ensureDataDir(appPaths.dataDir);
  const uid = process.getuid?.() ?? 0;
  const paths = servicePaths(env, dataDir, uid);

  // The lock first, before anything heavy: a second service (a racing client started it) leaves at once.
  const lock = acquireServiceLock(paths.lockFile);
  if (!lock.acquired)
    throw new SandboxDeskError('refused', `a Sandbox Desk service (pid ${lock.holder.pid}) already serves ${dataDir}`, {
      hint: 'every sandbox-desk command uses it; `sandbox-desk service status` shows it, `sandbox-desk service stop` stops it',
    });

  let config: Config = DEFAULT_CONFIG;
  let configProblem: string | null = null;
  try {
    config = loadConfig(appPaths).config;
  } catch (err) {
    configProblem = (err as Error).message;
  }
  const log = openLog({
    file: appPaths.logFile,
    level: config.log.level,
    maxBytes: config.log.maxBytes,
    files: config.log.files,
    component: 'service',
  });
  const logger = log.logger;
  if (configProblem) logger.error({ err: configProblem }, 'config not usable: running on defaults');
  if (paths.fallbackReason) {
    logger.warn(paths.fallbackReason);
    say(paths.fallbackReason);
  }

  let desk: SandboxDesk | null = null;
  let server: LocalServer | null = null;
  try {
    prepareRuntimeDir(paths.runtimeDir, uid);
    // We hold the lock: whatever socket is there is a dead service's.
    if (existsSync(paths.socketPath)) unlinkSync(paths.socketPath);

    desk = new SandboxDesk({ dataDir, config, logger, configPaths: appPaths });
    const startedAt = new Date().toISOString();
    const version = ownVersion(env);
    const clients = new Set<Socket>();
    const idle = new IdleExit(idleExitMs(env, config.service.idleExitSeconds));
    const openDesk = desk;

    const busy = async (): Promise<ServiceBusy> => {
      const list = await openDesk.listSandboxes();
      const running = list.filter((s) => BUSY_STATES.has(s.state));
      return {
        runningSandboxes: running.length,
        clients: clients.size,
        recordings: running.filter((s) => openDesk.desktop.screenRecordingStatus(s.name)?.on).length,
      };
    };

    let stop!: (reason: string) => void;
    const stopped = new Promise<string>((resolve) => (stop = resolve));

    const routes = async (req: IncomingMessage, res: ServerResponse, url: { pathname: string }): Promise<boolean> => {
      const send = (status: number, body: unknown): true => {
        res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
        res.end(JSON.stringify(body));
        return true;
      };
      // A client that names the service it expects and finds another is refused before anything runs;
      // it then handshakes (src/client/connect.ts) with the info sent here: restart or refuse.
      const expects = req.headers[CLIENT_VERSION_HEADER];
      if (typeof expects === 'string' && expects !== clientVersionTag(version)) {
        const info: ServiceInfo = { version, pid: process.pid, protocol: SERVICE_PROTOCOL, dataDir, startedAt, busy: await busy() };
        return send(409, {
          error: {
            code: 'version_mismatch',
            message: `this service runs ${clientVersionTag(version)}; the client expects ${expects.slice(0, 100)}`,
            details: { service: info },
          },
        });
      }
      if (url.pathname === '/service/info' && req.method === 'GET') {
        const info: ServiceInfo = { version, pid: process.pid, protocol: SERVICE_PROTOCOL, dataDir, startedAt, busy: await busy() };
        return send(200, info);
      }
      if (url.pathname === '/service/stop' && req.method === 'POST') {
        const body = await readJsonObject(req, 1024);
        const b = await busy();
        if (b.runningSandboxes > 0 && body.force !== true)
          return send(409, {
            error: {
              code: 'refused',
              message: `${b.runningSandboxes} sandbox(es) are running in this service`,
              hint: 'stop them first, or `sandbox-desk service stop --force` (they keep running and are re-adopted by the next service)',
            },
          });
        send(200, { ok: { stopping: true } });
        stop('asked to stop by a client');
        return true;
      }
      return false;
    };

    server = new LocalServer({
      desk,
      socket: {
        path: paths.socketPath,
        // Fail closed, and say so in the log: a refused or uncheckable peer gets one line on its socket too.
        admit: (socket) =>
          admitSameUser(socket, uid).then(
            (refusal) => {
              if (refusal !== null) logger.warn({ refusal }, 'connection refused by the peer-uid check');
              return refusal;
            },
            (err: unknown) => {
              logger.error({ err }, 'connection refused: its peer uid cannot be checked');
              throw err;
            },
          ),
        routes,
        upgrade: (req, socket, head) => relayMcp(openDesk, req, socket, head) || relayServe(openDesk, req, socket, head),
        onConnection: (socket) => {
          clients.add(socket);
          socket.once('close', () => clients.delete(socket));
        },
      },
    });
    // The socket is created 0600 (no window in which another user could connect), then chmod'ed to be sure.
    const umask = process.umask(0o177);
    try {
      await server.listenSocket();
    } finally {
      process.umask(umask);
    }
    chmodSync(paths.socketPath, 0o600);
    logger.info({ pid: process.pid, socket: paths.socketPath, version, idleExitMs: idle.idleMs }, 'service started');
    say(`serving ${dataDir} on ${paths.socketPath} (pid ${process.pid})`);
    // The service owns the warm pools (issue 37): it finishes what a previous one left, then refills in the background.
    openDesk.pools.start().catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'warm pools could not start'));
    // Desktops already running (a service killed before this one, or started by nobody we know) are recorded from now on.
    void adoptRunningDesktops({
      listSandboxes: () => openDesk.listSandboxes(),
      desktopStatus: (name) => openDesk.desktop.status(name),
      warn: (sandbox, err) =>
        logger.warn({ sandbox, err: err instanceof Error ? err.message : String(err) }, 'could not look at its desktop'),
    }).catch((err: unknown) =>
      logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'could not list sandboxes to adopt their desktops'),
    );
    try {
      loadPeerCredAddon();
    } catch (err) {
      // Not fatal to the service, fatal to every connection (each is refused with this reason): say it now.
      logger.error({ err }, 'every connection will be refused: the peer-uid check cannot run');
      say(`every connection will be refused: ${(err as Error).message}`);
    }

    const onSignal = (signal: string) => () => stop(`${signal} received`);
    const onTerm = onSignal('SIGTERM');
    const onInt = onSignal('SIGINT');
    process.once('SIGTERM', onTerm);
    process.once('SIGINT', onInt);

    // The directory itself, not its name: whatever writes next (the log, SQLite) may recreate the name.
    const dataDirId = dirIdentity(dataDir);
    // One cheap look every pollMs (≤ 2 s): the data dir still there? idle long enough?
    let looking = false;
    const timer = setInterval(() => {
      if (looking) return;
      if (removed(dataDir, dataDirId)) return stop(`the data directory ${dataDir} was removed`);
      looking = true;
      // With a client connected there is nothing to count: the engine is not asked.
      const state = clients.size > 0 ? Promise.resolve({ runningSandboxes: 0, clients: clients.size, recordings: 0 }) : busy();
      state
        .then((b) => {
          if (idle.observe(b, Date.now())) stop(`idle for ${idle.idleMs / 1000} s (no running sandbox, no client, no recording)`);
        })
        .catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'service: could not count running sandboxes'))
        .finally(() => (looking = false));
    }, idle.pollMs);

    const reason = await stopped;
    clearInterval(timer);
    process.off('SIGTERM', onTerm);
    process.off('SIGINT', onInt);
    logger.info({ reason }, 'service stopping');
    say(`stopping: ${reason}`);
    return reason;
  } finally {
    await server?.close().catch(() => undefined);
    await desk?.close().catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'closing the core failed'));
    try {
      if (existsSync(paths.socketPath)) unlinkSync(paths.socketPath);
    } catch {
      /* the data dir may be gone with it */
    }
    lock.release();
    log.dispose();
  }
}

function dirIdentity(dir: string): string | null {
  try {
    const st = statSync(dir);
    return `${st.dev}:${st.ino}`;
  } catch {
    return null;
  }
}

/** Removed (or removed and made again, a new directory under the same name). */
function removed(dir: string, id: string | null): boolean {
  return dirIdentity(dir) !== id;
}

/** The socket's directory: created 0700, and refused if it is a symlink or someone else's. */
function prepareRuntimeDir(dir: string, uid: number): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  if (st.isSymbolicLink() || !st.isDirectory() || st.uid !== uid)
    throw new SandboxDeskError('refused', `${dir} is not a directory of yours (a symlink, or owned by uid ${st.uid})`, {
      hint: `remove it, or set XDG_RUNTIME_DIR to a directory only you can write`,
    });
  chmodSync(dir, 0o700);
}
