import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { SandboxName } from '../api/contract.js';
import type { SandboxDesk } from '../api/sandbox-desk.js';
import { createMcpServer, stepFromEnvironment } from '../mcp/mcp-server.js';
import { LimitedStdioTransport } from '../mcp/stdio-transport.js';
import { ANY_SANDBOX, type AgentScope } from '../shared/agent-scope.js';
import { MCP_RELAY_PATH, MCP_RELAY_PROTOCOL } from '../shared/service-info.js';

/**
 * `sandbox-desk mcp` as a client: its stdin and stdout are relayed over one upgraded connection on the
 * service's socket, and the service runs the MCP server on it — the same server, the same stdio framing
 * and limits (LimitedStdioTransport over the connection instead of process.stdin/stdout). The client
 * sends its scope (`sandbox=` repeated) and its step environment (`RUNLOOP_STEP_ID`, `STEP_OUTPUT_DIR`)
 * in the query. The end of the client's input is the end of the requests: each one already read is
 * answered, then the connection ends.
 */
export function relayMcp(desk: SandboxDesk, req: IncomingMessage, socket: Socket, head: Buffer): boolean {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (url.pathname !== MCP_RELAY_PATH) return false;
  const refuse = (message: string): true => {
    socket.end(`HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: text/plain\r\n\r\n${message}\n`);
    return true;
  };
  if ((req.headers.upgrade ?? '').toLowerCase() !== MCP_RELAY_PROTOCOL) return refuse(`upgrade to ${MCP_RELAY_PROTOCOL} expected`);
  const names = url.searchParams.getAll('sandbox');
  for (const n of names) if (!SandboxName.safeParse(n).success) return refuse(`--sandbox ${JSON.stringify(n)} is not a sandbox name`);
  const scope: AgentScope = names.length ? { tools: 'mcp', sandboxes: [...new Set(names)] } : ANY_SANDBOX;
  const stepEnv: NodeJS.ProcessEnv = {};
  const runloop = url.searchParams.get('RUNLOOP_STEP_ID');
  const outputDir = url.searchParams.get('STEP_OUTPUT_DIR');
  if (runloop) stepEnv.RUNLOOP_STEP_ID = runloop;
  if (outputDir) stepEnv.STEP_OUTPUT_DIR = outputDir;

  socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: ${MCP_RELAY_PROTOCOL}\r\nConnection: Upgrade\r\n\r\n`);
  if (head.length) socket.unshift(head);
  const server = createMcpServer(desk, {
    stepFromEnv: stepFromEnvironment(stepEnv),
    scope,
    policy: { allowOtherUsers: desk.config.agents.allowOtherUsers },
  });
  const transport = new LimitedStdioTransport(socket, socket);
  let done = false;
  const finish = (): void => {
    if (done) return;
    done = true;
    void server.close().finally(() => socket.end());
  };
  socket.on('error', () => socket.destroy());
  socket.once('end', () => void transport.idle().then(finish));
  socket.once('close', finish);
  void server.connect(transport).catch(() => socket.destroy());
  return true;
}
