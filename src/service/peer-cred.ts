import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';

export interface PeerCredentials {
  uid: number;
  pid: number;
}

/** The addon's one function (src/service/native/peer-cred-addon.c). */
export interface PeerCredAddon {
  peerCredentials(fd: number): PeerCredentials;
}

/**
 * Where the compiled addon is: dist/native/peer-cred.node, built by `npm run build`. Found relative to
 * this module — src/service/ under vitest and tsx, dist/src/service/ when built — and, in the packaged
 * app, outside the asar archive (electron-builder unpacks dist/native/; a shared object cannot be
 * mapped from inside the archive).
 */
export function peerCredAddonPath(): string | null {
  for (const rel of ['../../dist/native/peer-cred.node', '../../native/peer-cred.node']) {
    const p = fileURLToPath(new URL(rel, import.meta.url)).replace(/([/\\])app\.asar([/\\])/, '$1app.asar.unpacked$2');
    if (existsSync(p)) return p;
  }
  return null;
}

let loaded: PeerCredAddon | null = null;

/** The addon, loaded once; throws saying what to do when it is not built or does not load. */
export function loadPeerCredAddon(path = peerCredAddonPath()): PeerCredAddon {
  if (loaded) return loaded;
  if (!path) throw new Error('the peer-uid check (dist/native/peer-cred.node) is not built: run `npm run build`');
  try {
    loaded = createRequire(import.meta.url)(path) as PeerCredAddon;
  } catch (e) {
    throw new Error(`the peer-uid check (${path}) does not load: ${(e as Error).message}; run \`npm run build\``, { cause: e });
  }
  return loaded;
}

/** The fd under a net.Socket (not public API: `_handle.fd`, a number on Unix; -1 or absent when it has none). */
function socketFd(socket: Socket): number | null {
  const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  return typeof fd === 'number' && Number.isInteger(fd) && fd >= 0 ? fd : null;
}

/**
 * Who is at the other end of an accepted Unix socket connection: one getsockopt(SO_PEERCRED) in this
 * process (Node cannot ask by itself). It reads nothing, so the client's first bytes stay for the HTTP
 * server. Throws — never guesses — when the socket has no fd or the fd no peer credentials.
 */
export function peerCredentials(socket: Socket, addon: () => PeerCredAddon = loadPeerCredAddon): PeerCredentials {
  const fd = socketFd(socket);
  if (fd === null) throw new Error('the connection has no file descriptor to ask for its peer');
  return addon().peerCredentials(fd);
}

/**
 * The admission rule of the service's socket: only this process's own uid. Fail closed: when the peer
 * cannot be asked (no fd, addon missing) the promise rejects and the server refuses the connection.
 */
export async function admitSameUser(
  socket: Socket,
  ownUid = process.getuid?.() ?? -1,
  addon?: () => PeerCredAddon,
): Promise<string | null> {
  const peer = peerCredentials(socket, addon);
  if (peer.uid === ownUid) return null;
  return `the connecting process (pid ${peer.pid}) runs as uid ${peer.uid}; this service serves only uid ${ownUid}`;
}
