import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { LocalServer } from '../api/local-server.js';
import { SandboxName } from '../api/contract.js';
import type { SandboxDesk } from '../api/sandbox-desk.js';
import { createMcpHttpHandler } from '../mcp/mcp-http.js';
import { stepFromEnvironment } from '../mcp/mcp-server.js';
import { ANY_SANDBOX } from '../shared/agent-scope.js';
import { asSandboxDeskError, SandboxDeskError } from '../shared/errors.js';
import { SERVE_RELAY_PATH, SERVE_RELAY_PROTOCOL, type ServeGrant } from '../shared/service-info.js';

/**
 * `sandbox-desk serve` (and the window's child `serve`) as a client: it holds one upgraded connection
 * on the service's socket, and for exactly as long the service keeps a loopback TCP listener open for
 * it — the browser mode's LocalServer, with the UI token, --port, --mcp, --mcp-sandbox, --allow-origin
 * as before. The first line back is the grant (URL, tokens) or an error, as JSON; when the connection
 * closes (Ctrl-C, the client killed) the listener closes. Nothing listens on TCP otherwise.
 */
export function relayServe(desk: SandboxDesk, req: IncomingMessage, socket: Socket, head: Buffer): boolean {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (url.pathname !== SERVE_RELAY_PATH) return false;
  void head;
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: ${SERVE_RELAY_PROTOCOL}\r\nConnection: Upgrade\r\n\r\n`);
  socket.on('error', () => socket.destroy());
  const answer = (line: unknown): void => void socket.write(JSON.stringify(line) + '\n');
  let server: LocalServer | null = null;
  let closed = false;
  socket.once('close', () => {
    closed = true;
    void server?.close();
  });
  // The client sends nothing more; reading is what notices it went (its end, or a reset).
  socket.resume();
  socket.once('end', () => socket.destroy());
  void (async () => {
    const q = url.searchParams;
    const portText = q.get('port');
    const port = portText === null ? desk.config.serve.port : Number(portText);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
      throw new SandboxDeskError('invalid_input', `--port must be 0-65535, got ${JSON.stringify(portText)}`);
    const mcpSandboxes = q.getAll('mcpSandbox');
    for (const n of mcpSandboxes)
      if (!SandboxName.safeParse(n).success)
        throw new SandboxDeskError('invalid_input', `--mcp-sandbox ${JSON.stringify(n)} is not a sandbox name`);
    const stepEnv: NodeJS.ProcessEnv = {};
    for (const k of ['RUNLOOP_STEP_ID', 'STEP_OUTPUT_DIR'] as const) {
      const v = q.get(k);
      if (v) stepEnv[k] = v;
    }
    const origin = q.get('allowOrigin');
    const s = new LocalServer({
      desk,
      port,
      extraOrigins: origin ? [origin] : [],
      mcp:
        q.get('mcp') === '1'
          ? {
              handler: createMcpHttpHandler(desk, {
                stepFromEnv: stepFromEnvironment(stepEnv),
                policy: { allowOtherUsers: desk.config.agents.allowOtherUsers },
              }),
              sessionAgentScope: mcpSandboxes.length ? { tools: 'mcp', sandboxes: [...new Set(mcpSandboxes)] } : ANY_SANDBOX,
              agentTokens: desk.store.agentTokens,
            }
          : undefined,
    });
    try {
      await s.listen();
    } catch (err) {
      throw new SandboxDeskError('refused', `cannot listen on 127.0.0.1:${port}: ${(err as Error).message}`, {
        hint: 'choose another --port, or omit it',
      });
    }
    server = s;
    if (closed) return void s.close();
    const grant: ServeGrant = { url: s.appUrl(), origin: s.origin, token: s.token, agentToken: s.agentToken };
    answer({ ok: grant });
  })().catch((err: unknown) => {
    answer({ error: asSandboxDeskError(err).toJSON() });
    socket.end();
  });
  return true;
}
