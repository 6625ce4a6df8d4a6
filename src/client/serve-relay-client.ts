import { request as httpRequest } from 'node:http';
import type { Socket } from 'node:net';
import { SandboxDeskError, type ErrorCode } from '../shared/errors.js';
import { SERVE_RELAY_PATH, SERVE_RELAY_PROTOCOL, type ServeGrant } from '../shared/service-info.js';

export interface ServeRequest {
  port?: number;
  mcp?: boolean;
  mcpSandboxes?: string[];
  allowOrigin?: string;
  /** The client's RUNLOOP_STEP_ID / STEP_OUTPUT_DIR, for the calls of the /mcp it asks for. */
  env?: NodeJS.ProcessEnv;
}

/**
 * Asks the service to serve the browser mode on loopback for as long as the returned connection
 * lives: `close()` (or this process dying) closes the listener. Resolves once it listens.
 */
export function holdServe(socketPath: string, r: ServeRequest): Promise<{ grant: ServeGrant; closed: Promise<void>; close(): void }> {
  const q = new URLSearchParams();
  if (r.port !== undefined) q.set('port', String(r.port));
  if (r.mcp) q.set('mcp', '1');
  for (const s of r.mcpSandboxes ?? []) q.append('mcpSandbox', s);
  if (r.allowOrigin) q.set('allowOrigin', r.allowOrigin);
  for (const k of ['RUNLOOP_STEP_ID', 'STEP_OUTPUT_DIR'] as const) if (r.env?.[k]) q.set(k, r.env[k]);
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      socketPath,
      path: `${SERVE_RELAY_PATH}?${q}`,
      agent: false,
      headers: { Host: 'localhost', Connection: 'Upgrade', Upgrade: SERVE_RELAY_PROTOCOL },
    });
    req.on('error', (err) => reject(new SandboxDeskError('backend_unavailable', `cannot reach the service: ${err.message}`)));
    req.on('response', (res) => reject(new SandboxDeskError('refused', `the service refused to serve (${res.statusCode})`)));
    req.on('upgrade', (_res, socket: Socket, head: Buffer) => {
      let buf = head.toString('utf8');
      const closed = new Promise<void>((done) => socket.once('close', () => done()));
      socket.on('error', () => socket.destroy());
      const onData = (d: Buffer): void => {
        buf += d.toString('utf8');
        const nl = buf.indexOf('\n');
        if (nl === -1) return;
        socket.off('data', onData);
        const line = JSON.parse(buf.slice(0, nl)) as { ok?: ServeGrant; error?: { code: string; message: string; hint?: string } };
        if (line.error) {
          socket.destroy();
          return reject(
            new SandboxDeskError(line.error.code as ErrorCode, line.error.message, line.error.hint ? { hint: line.error.hint } : {}),
          );
        }
        resolve({ grant: line.ok as ServeGrant, closed, close: () => socket.destroy() });
      };
      socket.on('data', onData);
      if (buf.includes('\n')) onData(Buffer.alloc(0));
      socket.once('close', () => reject(new SandboxDeskError('backend_unavailable', 'the service closed the connection before serving')));
    });
    req.end();
  });
}
