import { createServer, type Server, type Socket } from 'node:net';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import type { IDisposable } from '../shared/lifecycle.js';
import { openRelay } from './relay.js';

export interface PortForward extends IDisposable {
  /** The loopback port on this machine. */
  localPort: number;
  /** Stops listening and ends every relayed connection; `closed` settles once the port is released. */
  dispose(): void;
  readonly closed: Promise<void>;
}

/**
 * Makes a port on the sandbox's own loopback reachable at 127.0.0.1:<localPort> here. Each accepted
 * connection gets its own exec stream running a relay inside the sandbox; nothing is published and
 * nothing listens beyond this machine's loopback.
 */
export async function forwardPort(env: SandboxEnvironment, remotePort: number, user?: string): Promise<PortForward> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    const relay = openRelay(env, { tcp: { host: '127.0.0.1', port: remotePort } }, user);
    socket.pipe(relay.stdin);
    relay.stdout.pipe(socket);
    const end = (): void => {
      socket.destroy();
      relay.kill();
      sockets.delete(socket);
    };
    socket.on('close', end);
    socket.on('error', end);
    relay.on('close', end);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const localPort = typeof address === 'object' && address ? address.port : 0;
  const closed = new Promise<void>((resolve) => server.once('close', () => resolve()));
  let disposed = false;
  return {
    localPort,
    closed,
    dispose: () => {
      if (disposed) return;
      disposed = true;
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}
