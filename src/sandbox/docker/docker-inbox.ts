/**
 * The inbox of a Docker sandbox: a host folder the container sees read-only at INBOX_SANDBOX_DIR, where
 * the app listens on Unix sockets that processes it starts in the sandbox (through execPrefix) connect
 * to. The desktop's screen stream uses it so its bytes skip `docker exec`'s stdio (the CLI, dockerd and
 * the shim: three user-space hops to schedule per chunk on a loaded machine).
 *
 * Read-only on purpose: connecting to a Unix socket on a read-only mount works (EROFS is only for
 * files, folders and links), but the sandbox can neither remove nor replace the app's socket, nor plant
 * anything for the app to follow. One folder per sandbox (never shared between sandboxes), bound as a
 * folder rather than a socket file so a new socket (another process, a restart of the app) shows.
 *
 *   <dataDir>/inbox/<12 hex of the container name>/   0755 (the desktop's account must search it);
 *   removed with its container (DockerProvider.remove).
 */
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

export const INBOX_SANDBOX_DIR = '/run/sandbox-desk-inbox';

/**
 * The name a container was made under, when it was renamed since (a warm pool's sandbox takes its
 * user's name at the claim): its inbox folder keeps the first name's. Set by the app at creation; a
 * sandbox cannot change its container's labels.
 */
export const CREATED_AS_LABEL = 'io.sandbox-desk.created-as';

/** The name the container's inbox folder is named after: the one it was made under. */
export function inboxNameOf(inspected: { Name: string; Config?: { Labels?: Record<string, string> | null } }): string {
  return inspected.Config?.Labels?.[CREATED_AS_LABEL] ?? inspected.Name.replace(/^\//, '');
}

/** Short on purpose: a Unix socket path must stay under 108 bytes whatever the data dir. */
export function inboxDirOf(dataDir: string, resourceName: string): string {
  return join(dataDir, 'inbox', createHash('sha256').update(resourceName).digest('hex').slice(0, 12));
}

/** Made before a create or start: a bind whose source is missing would otherwise be made by dockerd, as root. */
export function ensureInboxDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  chmodSync(dir, 0o755); // the umask may have taken the others' search bit
}

/** The HostConfig.Binds entry. */
export function inboxBind(dir: string): string {
  return `${dir}:${INBOX_SANDBOX_DIR}:ro`;
}

/** One mount as `docker inspect` lists it. */
export interface InspectedMount {
  Type?: string;
  Source?: string;
  Destination?: string;
  RW?: boolean;
}

/**
 * The inbox as the container really has it (its inspected mounts), or undefined: a container created
 * before inboxes existed, one whose mount is writable (the sandbox could replace the socket), or one
 * whose source is not the folder this data dir made for it.
 */
export function inboxFromMounts(
  mounts: readonly InspectedMount[] | undefined,
  expectedDir: string | undefined,
): { hostDir: string; sandboxDir: string } | undefined {
  if (!expectedDir) return undefined;
  const m = mounts?.find((x) => x.Destination === INBOX_SANDBOX_DIR);
  if (!m || m.Type !== 'bind' || m.RW !== false || m.Source !== expectedDir) return undefined;
  return { hostDir: m.Source, sandboxDir: INBOX_SANDBOX_DIR };
}
