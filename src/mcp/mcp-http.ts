import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { McpHttpHandler } from '../api/local-server.js';
import type { SandboxDesk } from '../api/sandbox-desk.js';
import type { AgentPolicy } from '../shared/agent-scope.js';
import { classifyMessage, errorReply, IdAliases, OversizeSniffer, tooLargeReply, type JsonRpcErrorReply } from './jsonrpc-framing.js';
import { MCP_MESSAGE_MAX_BYTES } from './mcp-limits.js';
import { createMcpServer } from './mcp-server.js';

/** Past this, an oversized body is not even read to the end for its id: the connection is cut. */
const DISCARD_MAX_BYTES = 64 * 1024 * 1024;

function sendReply(res: ServerResponse, status: number, reply: JsonRpcErrorReply, close = false): void {
  if (res.headersSent) return void res.destroy();
  res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', ...(close ? { Connection: 'close' } : {}) });
  res.end(JSON.stringify(reply));
}

type Body = { ok: true; text: string } | { ok: false; status: number; reply: JsonRpcErrorReply; close: boolean };

/** Reads a POST body up to the message limit; above it, answers with a JSON-RPC error (and the id). */
async function readBody(req: IncomingMessage, limit: number): Promise<Body> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > DISCARD_MAX_BYTES)
    return { ok: false, status: 413, reply: tooLargeReply(null, declared, limit), close: true };
  const chunks: Buffer[] = [];
  let size = 0;
  let over: OversizeSniffer | null = null;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (over) over.push(chunk);
    else if (size > limit) {
      over = new OversizeSniffer();
      for (const c of chunks) over.push(c);
      over.push(chunk);
      chunks.length = 0;
    } else chunks.push(chunk);
    if (size > DISCARD_MAX_BYTES) return { ok: false, status: 413, reply: tooLargeReply(over?.id() ?? null, null, limit), close: true };
  }
  if (over) return { ok: false, status: 413, reply: tooLargeReply(over.id(), size, limit), close: false };
  // Decoded once, whole: a character split across chunks stays one character.
  return { ok: true, text: Buffer.concat(chunks, size).toString('utf8') };
}

/**
 * The agent bridge over streamable HTTP, stateless: a fresh protocol server per request over the
 * shared core, scoped to the agent whose token came with it. Bodies up to the MCP message limit;
 * above it, malformed JSON and non-JSON-RPC get the spec's JSON-RPC errors, never a bare 400.
 */
export function createMcpHttpHandler(
  desk: SandboxDesk,
  opts: { stepFromEnv?: string | undefined; policy: AgentPolicy; maxBytes?: number },
): McpHttpHandler {
  const limit = opts.maxBytes ?? MCP_MESSAGE_MAX_BYTES;
  return {
    refuse(res, status, message) {
      sendReply(res, status, errorReply(null, -32001, message));
    },
    async handle(req: IncomingMessage, res: ServerResponse, agent) {
      let parsed: unknown;
      // Per request: an id the SDK cannot carry (null, 1.5) travels as an alias, answered with the client's id.
      const aliases = new IdAliases();
      if (req.method === 'POST') {
        const body = await readBody(req, limit);
        if (!body.ok) return sendReply(res, body.status, body.reply, body.close);
        const c = classifyMessage(body.text, aliases);
        if (!c.ok) return sendReply(res, 400, c.reply);
        parsed = c.message;
      }
      const server = createMcpServer(desk, { stepFromEnv: opts.stepFromEnv, scope: agent.scope, policy: opts.policy });
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      const send = transport.send.bind(transport);
      transport.send = (message, options) => send(aliases.restoreOnWire(message), options);
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, parsed);
    },
  };
}
