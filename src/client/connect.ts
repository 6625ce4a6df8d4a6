import { closeSync, lstatSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { SandboxDeskError } from '../shared/errors.js';
import { clientVersionTag, ownVersion, packageRoot, type ServiceInfo } from '../shared/service-info.js';
import { dataDirFromEnv, servicePaths, type ServicePaths } from '../shared/service-paths.js';
import { createHttpClient, type DeskClient } from './http-client.js';
import { socketRequest, SocketRequestError } from './socket-request.js';
import { versionHandshake } from './version-handshake.js';

export type ServiceClient = DeskClient;

export interface ConnectOptions {
  dataDir?: string;
  env?: NodeJS.ProcessEnv;
  /** Start the service when none runs (default true); false: fail with `backend_unavailable`. */
  start?: boolean;
  /** How long to wait for a service being started (default 30 s). */
  startTimeoutMs?: number;
  /**
   * The program that runs a service this client starts (default: this process's own executable). The
   * Electron window gives Node, or its own binary as Node (ELECTRON_RUN_AS_NODE) when packaged: the
   * service's native modules are built for one of the two.
   */
  runner?: ServiceRunner;
}

export interface ServiceRunner {
  execPath: string;
  env?: Record<string, string>;
}

/** Where this client looks for its service. */
export function clientServicePaths(opts: Pick<ConnectOptions, 'dataDir' | 'env'> = {}): ServicePaths & { dataDir: string } {
  const env = opts.env ?? process.env;
  const dataDir = opts.dataDir ?? dataDirFromEnv(env, homedir());
  return { ...servicePaths(env, dataDir, process.getuid?.() ?? 0), dataDir };
}

/**
 * The socket is trusted only if it is ours: owned by this uid, a socket, not a symlink (someone else
 * could point us at their service and read what we send). The service checks our uid in turn.
 */
export function checkSocketOwner(socketPath: string, uid = process.getuid?.() ?? 0): 'absent' | 'ok' {
  let st;
  try {
    st = lstatSync(socketPath);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'absent';
    throw err;
  }
  const refuse = (why: string): never => {
    throw new SandboxDeskError('refused', `${socketPath} ${why}: not connecting to it`, {
      hint: `remove it (rm ${JSON.stringify(socketPath)}) if it is not yours; the next command starts a service of your own`,
    });
  };
  if (st.isSymbolicLink()) refuse('is a symlink');
  if (!st.isSocket()) refuse('is not a socket');
  if (st.uid !== uid) refuse(`belongs to uid ${st.uid}, not to you (uid ${uid})`);
  return 'ok';
}

/** The service's info over its socket, or null when nobody answers there (no socket, a stale one). */
export async function probeService(socketPath: string, timeoutMs = 5000): Promise<ServiceInfo | null> {
  // A service killed a moment ago resets connections while its threads are still exiting; a moment later
  // its socket refuses (stale: null). A service that refused us on purpose answers with a line instead.
  for (let attempt = 0; ; attempt++) {
    try {
      return await probeOnce(socketPath, timeoutMs);
    } catch (err) {
      const reset = err instanceof SandboxDeskError && (err.cause as NodeJS.ErrnoException | undefined)?.code === 'ECONNRESET';
      if (attempt >= 4 || !reset) throw err;
      await new Promise((r) => setTimeout(r, 100 * (attempt + 1)));
    }
  }
}

async function probeOnce(socketPath: string, timeoutMs: number): Promise<ServiceInfo | null> {
  if (checkSocketOwner(socketPath) === 'absent') return null;
  let res;
  try {
    res = await socketRequest({ socketPath, method: 'GET', path: '/service/info', timeoutMs });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (!(err instanceof SocketRequestError) && (code === 'ECONNREFUSED' || code === 'ENOENT')) return null;
    // A peer the service refused gets one line and a closed socket: say that line.
    throw new SandboxDeskError('refused', `cannot talk to the service at ${socketPath}: ${(err as Error).message}`, { cause: err });
  }
  const text = res.body.toString('utf8');
  try {
    const v = JSON.parse(text) as ServiceInfo;
    if (res.status === 200) return v;
  } catch {
    /* below */
  }
  throw new SandboxDeskError('refused', `the service at ${socketPath} answered ${res.status}: ${text.trim().slice(0, 200)}`);
}

/** Asks the service to stop (its sandboxes keep running); resolves once its socket no longer answers. */
export async function stopService(socketPath: string, force: boolean, timeoutMs = 30_000): Promise<ServiceInfo | null> {
  const info = await probeService(socketPath);
  if (!info) return null;
  const client = createHttpClient({ socketPath });
  try {
    const res = await client.request('/service/stop', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: Buffer.from(JSON.stringify({ force })),
    });
    let text = '';
    for await (const c of res) text += String(c);
    if (res.statusCode !== 200) {
      const e = (JSON.parse(text) as { error: { code: 'refused'; message: string; hint?: string } }).error;
      throw new SandboxDeskError(e.code, e.message, e.hint ? { hint: e.hint } : {});
    }
  } finally {
    await client.close();
  }
  await waitFor(timeoutMs, async () => !pidAlive(info.pid), `the service (pid ${info.pid}) did not stop within ${timeoutMs / 1000} s`);
  return info;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function waitFor(timeoutMs: number, ready: () => Promise<boolean>, message: string, hint?: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 10; ; delay = Math.min(delay * 2, 200)) {
    if (await ready()) return;
    if (Date.now() > deadline) throw new SandboxDeskError('backend_unavailable', message, hint ? { hint } : {});
    await new Promise((r) => setTimeout(r, delay));
  }
}

/**
 * Starts `sandbox-desk service run` detached (it outlives this client), its output appended to the
 * service log. Racing clients may each start one: the lock lets one win, the others exit at once.
 * `node:child_process` is loaded only here: a CLI call to a running service never needs it.
 */
export async function startService(
  paths: ServicePaths,
  env: NodeJS.ProcessEnv,
  runner: ServiceRunner = { execPath: process.execPath },
): Promise<void> {
  const { spawn } = await import('node:child_process');
  mkdirSync(dirname(paths.logFile), { recursive: true, mode: 0o700 });
  const log = openSync(paths.logFile, 'a', 0o600);
  try {
    const child = spawn(runner.execPath, [join(packageRoot(), 'bin', 'sandbox-desk.js'), 'service', 'run'], {
      detached: true,
      stdio: ['ignore', log, log],
      env: { ...env, ...runner.env },
    });
    child.unref();
  } finally {
    closeSync(log);
  }
}

function lastLogLines(file: string): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-3).join(' | ');
  } catch {
    return '';
  }
}

/**
 * A client of this user's service for the data directory: found by its socket, checked (owner, not a
 * symlink, same version), started on demand when none answers. Another version is restarted when
 * nothing runs in it, else refused with `version_mismatch`.
 */
export async function connect(opts: ConnectOptions = {}): Promise<ServiceClient> {
  const env = opts.env ?? process.env;
  const paths = clientServicePaths(opts);
  const timeoutMs = opts.startTimeoutMs ?? 30_000;
  const version = ownVersion(env);
  let info = await probeService(paths.socketPath);
  for (let restarts = 0; ; restarts++) {
    if (!info) {
      if (opts.start === false)
        throw new SandboxDeskError('backend_unavailable', `no Sandbox Desk service runs for ${paths.dataDir}`, {
          hint: 'any sandbox-desk command starts it, or run `sandbox-desk service run`',
        });
      await startService(paths, env, opts.runner);
      let found: ServiceInfo | null = null;
      await waitFor(
        timeoutMs,
        async () => (found = await probeService(paths.socketPath)) !== null,
        `the Sandbox Desk service did not answer within ${timeoutMs / 1000} s on ${paths.socketPath}${lastLogLines(paths.logFile) ? `: ${lastLogLines(paths.logFile)}` : ''}`,
        `see its log: ${paths.logFile}`,
      );
      info = found;
    }
    if (!info) continue;
    const h = versionHandshake(version, info);
    if (h.action === 'use') return createHttpClient({ socketPath: paths.socketPath });
    if (h.action === 'refuse') throw h.error;
    if (restarts > 0)
      throw new SandboxDeskError('version_mismatch', `${h.reason}: a service of this version did not come up in its place`, {
        hint: `see its log: ${paths.logFile}`,
      });
    process.stderr.write(`sandbox-desk: ${h.reason}\n`);
    await stopService(paths.socketPath, false, timeoutMs);
    info = null;
  }
}

/** A call that never reached a service: nothing listens on the socket (none started yet, or a dead one's). */
function neverArrived(err: unknown): boolean {
  const cause = err instanceof SandboxDeskError ? (err.cause as NodeJS.ErrnoException | undefined) : undefined;
  return (
    err instanceof SandboxDeskError && err.code === 'service_unavailable' && (cause?.code === 'ENOENT' || cause?.code === 'ECONNREFUSED')
  );
}

/** The service refused a request for naming another version (the header check): nothing ran. */
function refusedForVersion(err: unknown): boolean {
  return err instanceof SandboxDeskError && err.code === 'version_mismatch' && typeof err.details?.service === 'object';
}

/**
 * `connect`, without its round-trip when a service already answers: the client's first request goes
 * straight to the socket, tagged with the version it expects (the service refuses another before doing
 * anything). Only when that request never arrived (no service yet, a stale socket) or was refused for
 * its version does it `connect` — start, handshake, restart or refuse as there — and send it again;
 * either way it did not run. A `sandbox-desk exec` is then one HTTP request on the socket.
 */
export async function connectLazily(opts: ConnectOptions = {}): Promise<ServiceClient> {
  const env = opts.env ?? process.env;
  const paths = clientServicePaths(opts);
  if (checkSocketOwner(paths.socketPath) === 'absent') return connect(opts);
  const direct = createHttpClient({ socketPath: paths.socketPath, expects: clientVersionTag(ownVersion(env)) });
  let checked: Promise<ServiceClient> | null = null;
  // A call the service answered proves it runs our version: raw requests may then go direct too.
  let verified = false;
  // After a fallback, every request goes through the client `connect` made (the service is ours now).
  const viaConnect = (): Promise<ServiceClient> => (checked ??= connect(opts));
  const retried = async <T>(first: () => Promise<T>, again: (c: ServiceClient) => Promise<T>): Promise<T> => {
    if (checked) return again(await checked);
    try {
      const r = await first();
      verified = true;
      return r;
    } catch (err) {
      if (!neverArrived(err) && !refusedForVersion(err)) throw err;
      return again(await viaConnect());
    }
  };
  return {
    call: (method, params, o) =>
      retried(
        () => direct.call(method, params, o),
        (c) => c.call(method, params, o),
      ),
    // A raw route answers a version refusal as a response, not an error, and a streamed body cannot be
    // sent twice: a raw request goes direct only once a call has proved the service is ours.
    request: (path, init) => (verified && !checked ? direct.request(path, init) : viaConnect().then((c) => c.request(path, init))),
    // The same socket either way; a stream's grant comes from a call, which has reached the service.
    openStream: (grant) => direct.openStream(grant),
    async close() {
      await direct.close();
      if (checked) await (await checked.catch(() => null))?.close();
    },
  };
}
