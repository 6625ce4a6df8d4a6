import { request as httpRequest } from 'node:http';
import type { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { SandboxDeskError } from '../shared/errors.js';
import { MCP_RELAY_PATH, MCP_RELAY_PROTOCOL } from '../shared/service-info.js';

/**
 * The client half of `sandbox-desk mcp`: upgrades one connection on the service's socket and copies
 * bytes both ways, untouched — the service frames, limits and answers them (src/service/mcp-relay.ts).
 * At the end of `input` only its side is closed, so every answer still arrives; resolves when the
 * service ends the connection, or when `stop` fires (a signal).
 */
export function relayMcpStdio(opts: {
  socketPath: string;
  sandboxes: string[];
  env: NodeJS.ProcessEnv;
  input: Readable;
  output: Writable;
  stop?: AbortSignal;
}): Promise<void> {
  const q = new URLSearchParams();
  for (const s of opts.sandboxes) q.append('sandbox', s);
  for (const k of ['RUNLOOP_STEP_ID', 'STEP_OUTPUT_DIR'] as const) if (opts.env[k]) q.set(k, opts.env[k]);
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      socketPath: opts.socketPath,
      path: `${MCP_RELAY_PATH}?${q}`,
      agent: false,
      headers: { Host: 'localhost', Connection: 'Upgrade', Upgrade: MCP_RELAY_PROTOCOL },
    });
    req.on('error', (err) => reject(new SandboxDeskError('backend_unavailable', `the MCP relay to the service failed: ${err.message}`)));
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('end', () => reject(new SandboxDeskError('refused', `the service refused the MCP relay (${res.statusCode}): ${text.trim()}`)));
    });
    req.on('upgrade', (_res, socket: Socket, head: Buffer) => {
      if (head.length) opts.output.write(head);
      socket.pipe(opts.output, { end: false });
      opts.input.pipe(socket);
      const done = (): void => {
        opts.input.unpipe(socket);
        // Everything the service sent is handed to stdout before the command ends.
        if (opts.output.writableNeedDrain) opts.output.once('drain', () => resolve());
        else resolve();
      };
      socket.on('error', () => socket.destroy());
      socket.once('close', done);
      opts.stop?.addEventListener('abort', () => socket.destroy(), { once: true });
    });
    req.end();
  });
}
