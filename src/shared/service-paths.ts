import { join } from 'node:path';
import { sha256Hex } from './sha256-hex.js';

/**
 * Where the per-user service (src/service/) and its clients (src/client/) meet: a pure function of the
 * environment and the data directory, here in `shared` because the client may import nothing else.
 *
 * The socket lives in `$XDG_RUNTIME_DIR/sandbox-desk/<hash of the data dir>/service.sock` (a tmpfs the
 * session owns, cleaned at logout), else in `<data dir>/run/`. A Unix socket path holds at most 107
 * bytes (sun_path is 108 with its NUL); a longer one falls back to `/tmp/sandbox-desk-<uid>/<hash>/`,
 * and `fallbackReason` says why, so the service can log it.
 */
export const SOCKET_NAME = 'service.sock';
/** sun_path is 108 bytes on Linux, the terminating NUL included. */
export const MAX_SOCKET_PATH_BYTES = 107;

export interface ServicePaths {
  /** The directory holding the socket (created 0700 by the service). */
  runtimeDir: string;
  socketPath: string;
  /** `<data dir>/service.lock`: one service per data directory. */
  lockFile: string;
  /** Where a service started on demand writes its stdout/stderr. */
  logFile: string;
  /** Set when the preferred path was too long and the short fallback is used. */
  fallbackReason: string | null;
}

/** The data directory a client means: the same rule as src/platform/data-dir.ts (which calls this). */
export function dataDirFromEnv(env: NodeJS.ProcessEnv, home: string): string {
  if (env.SANDBOX_DESK_HOME) return env.SANDBOX_DESK_HOME;
  const xdg = env.XDG_DATA_HOME && env.XDG_DATA_HOME.startsWith('/') ? env.XDG_DATA_HOME : join(home, '.local', 'share');
  return join(xdg, 'sandbox-desk');
}

/** A short stable name for a data directory (two homes of one user get two services). */
export function dataDirHash(dataDir: string): string {
  // sha256Hex, not node:crypto: the CLI's fast path would load crypto for this alone (sha256-hex.ts).
  return sha256Hex(dataDir).slice(0, 12);
}

export function servicePaths(env: NodeJS.ProcessEnv, dataDir: string, uid: number): ServicePaths {
  const xdg = env.XDG_RUNTIME_DIR;
  const hash = dataDirHash(dataDir);
  const preferred = xdg && xdg.startsWith('/') ? join(xdg, 'sandbox-desk', hash) : join(dataDir, 'run');
  const common = { lockFile: join(dataDir, 'service.lock'), logFile: join(dataDir, 'logs', 'service.log') };
  const socketPath = join(preferred, SOCKET_NAME);
  if (Buffer.byteLength(socketPath) <= MAX_SOCKET_PATH_BYTES) return { runtimeDir: preferred, socketPath, fallbackReason: null, ...common };
  const short = join('/tmp', `sandbox-desk-${uid}`, hash);
  return {
    runtimeDir: short,
    socketPath: join(short, SOCKET_NAME),
    fallbackReason: `the socket path ${socketPath} is ${Buffer.byteLength(socketPath)} bytes, over the ${MAX_SOCKET_PATH_BYTES} a Unix socket allows: using ${join(short, SOCKET_NAME)}`,
    ...common,
  };
}
