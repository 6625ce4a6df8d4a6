import { createReadStream, existsSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { join, normalize, sep } from 'node:path';
import type { AgentScope } from '../shared/agent-scope.js';
import { asSandboxDeskError } from '../shared/errors.js';
import { projectRoot, resourcePath } from '../platform/project-root.js';
import { Authenticator, UI_COOKIE, type AgentTokenVerifier } from './auth.js';
import { callBodyLimit, readJsonObject } from './body-reader.js';
import { FILE_PATHS, type StreamGrant } from './contract.js';
import { createDispatcher, type StreamIssuer } from './dispatch.js';
import { statusFor } from './http-status.js';
import { noTokenPage, wantsPage } from './no-token-page.js';
import { decodeSegment, parseRequestTarget, type RequestTarget } from './request-target.js';
import type { SandboxDesk } from './sandbox-desk.js';
import { StreamServer } from './stream-server.js';
import { FileTransferRoutes } from './file-transfer-routes.js';
import { applyRequestTimeouts, DEFAULT_REQUEST_TIMEOUTS, pathIs } from './request-timeouts.js';

/**
 * The agent bridge over HTTP, injected by whoever starts the server (the serve command): the API
 * layer never imports the MCP layer. It gets the request unread and the agent's scope.
 */
export interface McpHttpHandler {
  handle(req: IncomingMessage, res: ServerResponse, agent: { tokenId: string; scope: AgentScope }): Promise<void>;
  /** Answers a refusal (no token, the UI's token) as JSON-RPC, since MCP clients expect that shape. */
  refuse(res: ServerResponse, status: number, message: string): void;
}

export interface LocalServerOptions {
  desk: SandboxDesk;
  /** 0 picks a free port. Always bound to 127.0.0.1. */
  port?: number;
  /** Origins allowed besides this server's own (e.g. "file://" for the Electron window). */
  extraOrigins?: string[];
  /** How long a stream ticket stays valid (default 30 s). */
  ticketTtlMs?: number;
  /** The built renderer (default dist/renderer). */
  rendererDir?: string;
  /**
   * Also serve the agent bridge at /mcp, for agent tokens only: the persisted ones (`token create`)
   * and one that lives as long as this server (`agentToken`), scoped as `sessionAgentScope` says.
   */
  mcp?: { handler: McpHttpHandler; sessionAgentScope?: AgentScope; agentTokens?: AgentTokenVerifier } | undefined;
  /**
   * How long a request may take to arrive whole (default 300 s, Node's) — except file uploads and
   * downloads, which stream as long as they take (request-timeouts.ts). Lowered by tests.
   */
  requestTimeoutMs?: number;
  /** How long any request's headers may take (default 60 s, Node's). */
  headersTimeoutMs?: number;
  /**
   * The per-user service's Unix socket (listenSocket()): no token there — the socket's mode 0600 and
   * `admit` (the peer's uid, checked per connection) are the credential.
   */
  socket?: LocalSocketOptions;
}

export interface LocalSocketOptions {
  path: string;
  /** Decides on each connection before a byte of it is read: null admits, a string refuses with that reason. */
  admit(socket: Socket): Promise<string | null>;
  /** Routes only the socket serves (the service's own, /service/*): true when it answered. */
  routes?(req: IncomingMessage, res: ServerResponse, url: RequestTarget): Promise<boolean>;
  /** Told when an admitted connection opens and closes (the service counts its clients). */
  onConnection?(socket: Socket): void;
  /** Upgrades only the socket serves (the service's MCP relay): true when it took the connection. */
  upgrade?(req: IncomingMessage, socket: Socket, head: Buffer): boolean;
}

const MIME: Record<string, string> = {
  '.js': 'text/javascript',
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

const AGENT_REFUSED = "an agent token opens only the MCP tools at /mcp; the app's API, viewer and streams need the UI token";

/**
 * The app's local server, for the browser mode and for the Electron window's streams: loopback only,
 * the UI token for every HTTP call (header, `?token=` once, then an HttpOnly SameSite cookie), agent
 * tokens for /mcp only, a single-use ticket for every stream, Host and Origin checks. It serves the
 * renderer, the contract's methods at POST /api/call/:method (the viewer page uses them too), the
 * desktop viewer, and the screen and terminal streams. Every request is parsed inside one boundary
 * that answers 400 and keeps serving.
 */
export class LocalServer implements StreamIssuer {
  private readonly auth: Authenticator;
  private readonly dispatch: ReturnType<typeof createDispatcher>;
  private readonly streams: StreamServer;
  private readonly server: Server;
  /** Connections admitted on the Unix socket: they skip the token, Host and Origin checks (and nothing else). */
  private readonly local = new Set<Socket>();
  private socketServer: NetServer | null = null;
  private tcpListening = false;
  /** Uploads and downloads of the file panel, ticketed like the streams (file-transfer-routes.ts). */
  readonly fileTransfers: FileTransferRoutes;
  port = 0;

  constructor(private readonly opts: LocalServerOptions) {
    // A server lives as long as the app: it records every running desktop it sees (issue 16).
    opts.desk.desktop.recordRunningDesktops();
    this.auth = new Authenticator({ agentTokens: opts.mcp?.agentTokens, sessionAgentScope: opts.mcp?.sessionAgentScope });
    this.streams = new StreamServer({
      desk: opts.desk,
      ticketTtlMs: opts.ticketTtlMs ?? 30_000,
      origin: () => this.origin,
      hostAllowed: (req) => this.hostAllowed(req),
      originAllowed: (origin) => this.originAllowed(origin),
    });
    this.fileTransfers = new FileTransferRoutes({
      desk: opts.desk,
      ticketTtlMs: opts.ticketTtlMs ?? 30_000,
      origin: () => this.origin,
      originAllowed: (origin) => this.originAllowed(origin),
    });
    this.dispatch = createDispatcher(opts.desk, this);
    this.server = createServer((req, res) => void this.handle(req, res));
    applyRequestTimeouts(
      this.server,
      {
        requestMs: opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUTS.requestMs,
        headersMs: opts.headersTimeoutMs ?? DEFAULT_REQUEST_TIMEOUTS.headersMs,
      },
      (req) => pathIs(req, [FILE_PATHS.upload, FILE_PATHS.download]),
    );
    this.server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
      if (this.local.has(socket) && opts.socket?.upgrade?.(req, socket, head)) return;
      this.streams.upgrade(req, socket, head);
    });
    // CONNECT is not ours to serve; without a listener Node would drop the connection unanswered.
    this.server.on('connect', (_req: IncomingMessage, socket: Socket) => {
      socket.on('error', () => socket.destroy());
      socket.end('HTTP/1.1 405 Method Not Allowed\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    });
    // A request Node cannot parse: a plain 400 (Node's default), and a reset socket is not an error.
    this.server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
      if (err.code === 'ECONNRESET' || !socket.writable) return socket.destroy();
      socket.end(
        `HTTP/1.1 ${err.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : '400 Bad Request'}\r\nConnection: close\r\n\r\n`,
      );
    });
  }

  /** The UI's token: it opens the app (and is printed in its URL). */
  get token(): string {
    return this.auth.uiToken;
  }

  /** The agent token that lives as long as this server (with `mcp`), or null. */
  get agentToken(): string | null {
    return this.auth.sessionAgent?.token ?? null;
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.opts.port ?? 0, '127.0.0.1', () => resolve());
    });
    const addr = this.server.address();
    this.port = typeof addr === 'object' && addr ? addr.port : 0;
    this.tcpListening = true;
    return this.origin;
  }

  /**
   * Listens on the Unix socket of `opts.socket` too (or only). Every connection is paused until
   * `admit` says yes, then handed to the same HTTP server: same routes, same streams, same limits.
   * A refused peer gets one line saying why and is closed.
   */
  async listenSocket(): Promise<void> {
    const o = this.opts.socket;
    if (!o) throw new Error('listenSocket needs the socket option');
    // Half-open as Node's HTTP server is: a client that ends its side (the MCP relay at the end of its
    // stdin) still gets every answer.
    const server = createNetServer({ pauseOnConnect: true, allowHalfOpen: true }, (socket) => {
      socket.on('error', () => socket.destroy());
      o.admit(socket).then(
        (refusal) => {
          if (socket.destroyed) return;
          if (refusal !== null) return void socket.end(`sandbox-desk: refused: ${refusal}\n`);
          this.local.add(socket);
          socket.once('close', () => this.local.delete(socket));
          o.onConnection?.(socket);
          this.server.emit('connection', socket);
          socket.resume();
        },
        (err: unknown) => socket.end(`sandbox-desk: refused: cannot check the peer: ${(err as Error).message}\n`),
      );
    });
    this.socketServer = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(o.path, () => {
        server.off('error', reject);
        resolve();
      });
    });
  }

  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The URL that opens the app in any browser (the browser mode). */
  appUrl(): string {
    return `${this.origin}/?token=${this.token}`;
  }

  /** The URL that opens a viewer for a sandbox's desktop in any browser. */
  viewerUrl(sandbox: string): string {
    return `${this.origin}/desktop/${encodeURIComponent(sandbox)}?token=${this.token}`;
  }

  /** Issues a single-use ticket for one screen stream (what the viewer page asks for). */
  issueScreenTicket(sandbox: string, viewerId?: string): StreamGrant & { viewerId: string } {
    return this.streams.screenTicket(sandbox, viewerId);
  }

  screenTicket(sandbox: string, viewerId?: string): StreamGrant & { viewerId: string } {
    return this.streams.screenTicket(sandbox, viewerId);
  }

  logTicket(grant: { sandbox: string; source: string; tail: number }): StreamGrant {
    return this.streams.logTicket(grant);
  }

  terminalTicket(terminalId: string): StreamGrant {
    return this.streams.terminalTicket(terminalId);
  }

  eventsTicket(): StreamGrant {
    return this.streams.eventsTicket();
  }

  /** Calls one contract method, as the Electron bridge does. */
  call(method: unknown, params: unknown): ReturnType<ReturnType<typeof createDispatcher>> {
    return this.dispatch(method, params);
  }

  async close(): Promise<void> {
    this.streams.close();
    const socketServer = this.socketServer;
    // The socket server's close waits for its connections, which the HTTP server saw only through
    // 'connection': they are ended here first.
    const closing = socketServer ? new Promise<void>((resolve) => socketServer.close(() => resolve())) : Promise.resolve();
    for (const socket of this.local) socket.destroy();
    await closing;
    if (this.tcpListening) {
      const tcpClosed = new Promise<void>((resolve) => this.server.close(() => resolve()));
      // close() ends only idle connections: one whose request was in flight stays keep-alive and would go
      // on answering its client's calls after the listener is gone (and hold the close open). All go.
      this.server.closeAllConnections();
      await tcpClosed;
    }
  }

  // ---- HTTP ---------------------------------------------------------------------------------------

  private hostAllowed(req: IncomingMessage): boolean {
    // A browser cannot reach the Unix socket: no rebinding to guard against there.
    if (this.local.has(req.socket)) return true;
    // DNS-rebinding guard: only our own loopback names.
    return req.headers.host === `127.0.0.1:${this.port}` || req.headers.host === `localhost:${this.port}`;
  }

  private originAllowed(origin: string | undefined): boolean {
    // Non-browser clients send no Origin; the token or ticket is what authenticates them.
    if (origin === undefined) return true;
    return [this.origin, `http://localhost:${this.port}`, ...(this.opts.extraOrigins ?? [])].includes(origin);
  }

  /** The one boundary: whatever a request holds, it gets a status and the server keeps serving. */
  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    req.on('error', () => undefined);
    res.on('error', () => undefined);
    try {
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.setHeader('Referrer-Policy', 'no-referrer');
      await this.route(req, res, parseRequestTarget(req.url));
    } catch (err) {
      const e = asSandboxDeskError(err);
      if (!res.headersSent) return this.send(res, statusFor(e.code), { error: e.toJSON() });
      res.destroy();
    }
  }

  private async route(req: IncomingMessage, res: ServerResponse, url: RequestTarget): Promise<void> {
    if (!this.hostAllowed(req)) return this.send(res, 403, { error: { code: 'refused', message: 'unexpected Host header' } });
    const path = url.pathname;
    if (this.local.has(req.socket)) return this.routeLocal(req, res, url);
    // noVNC's modules are public library code: served without the token (module imports carry none).
    if (req.method === 'GET' && path.startsWith('/novnc/'))
      return this.serveStatic(res, join(projectRoot(), 'node_modules', '@novnc', 'novnc'), decodeSegment(path.slice('/novnc/'.length)));
    if (req.method === 'GET' && path.startsWith('/viewer/'))
      return this.serveStatic(res, resourcePath('viewer'), decodeSegment(path.slice('/viewer/'.length)));

    // The file transfers' ticket is their credential (the Electron window has no cookie for this origin).
    if (await this.fileTransfers.handle(req, res, url)) return;

    const who = this.auth.authenticate(req, url.query);
    if (path === '/mcp' && this.opts.mcp) {
      const mcp = this.opts.mcp.handler;
      if (!who)
        return mcp.refuse(
          res,
          401,
          'missing or wrong agent token: send "Authorization: Bearer <agent token>" (printed by `sandbox-desk serve --mcp`, or made by `sandbox-desk token create`)',
        );
      if (who.principal.kind !== 'agent')
        return mcp.refuse(
          res,
          403,
          'the UI token does not open /mcp: give the agent an agent token (printed by `sandbox-desk serve --mcp`, or made by `sandbox-desk token create`)',
        );
      if (!this.originAllowed(req.headers.origin)) return mcp.refuse(res, 403, 'cross-origin request refused');
      return await mcp.handle(req, res, who.principal);
    }
    if (!who) {
      // A browser opening the app gets a page that says how to get in; clients of the API get JSON.
      if (wantsPage(req.method, path, req.headers.accept)) return this.sendPage(res, 401, noTokenPage());
      return this.send(res, 401, { error: { code: 'refused', message: 'missing or wrong token: open the URL Sandbox Desk printed' } });
    }
    if (who.principal.kind === 'agent')
      return this.send(res, 403, { error: { code: 'refused', message: AGENT_REFUSED, hint: 'agents call the MCP tools (POST /mcp)' } });
    // The URL's token becomes a cookie, so the page's own assets and calls carry it without the URL.
    if (who.via === 'query') res.setHeader('Set-Cookie', `${UI_COOKIE}=${this.token}; HttpOnly; SameSite=Strict; Path=/`);
    if (req.method !== 'GET' && !this.originAllowed(req.headers.origin)) {
      return this.send(res, 403, { error: { code: 'refused', message: 'cross-origin request refused' } });
    }

    return this.routeApi(req, res, url);
  }

  /** The Unix socket's routes: the service's own, the file transfers, the contract; its peer is already checked. */
  private async routeLocal(req: IncomingMessage, res: ServerResponse, url: RequestTarget): Promise<void> {
    if (await this.opts.socket?.routes?.(req, res, url)) return;
    if (await this.fileTransfers.handle(req, res, url)) return;
    return this.routeApi(req, res, url);
  }

  /** What an authenticated UI client may ask: the viewer page, the contract's calls, the renderer. */
  private async routeApi(req: IncomingMessage, res: ServerResponse, url: RequestTarget): Promise<void> {
    const path = url.pathname;
    if (req.method === 'GET' && /^\/desktop\/[^/]+$/.test(path)) return this.serveStatic(res, resourcePath('viewer'), 'index.html');

    const call = /^\/api\/call\/([A-Za-z]+)$/.exec(path);
    if (call && req.method === 'POST') {
      const limit = callBodyLimit(call[1] ?? '', { clipboardMaxBytes: this.opts.desk.config.clipboard.maxBytes });
      // A client that drops the connection before the answer (Ctrl-C in the CLI) interrupts its command.
      const gone = new AbortController();
      res.on('close', () => {
        if (!res.writableFinished) gone.abort();
      });
      const r = await this.dispatch(call[1], await readJsonObject(req, limit), { signal: gone.signal });
      return this.send(res, 'ok' in r ? 200 : statusFor(r.error.code), r);
    }

    if (req.method === 'GET' && (path === '/' || path === '/index.html' || path.startsWith('/assets/'))) {
      const dir = this.opts.rendererDir ?? join(projectRoot(), 'dist', 'renderer');
      if (!existsSync(join(dir, 'index.html'))) {
        return this.send(res, 503, {
          error: { code: 'backend_unavailable', message: 'the UI is not built: run `npm run build:renderer` (or `npm run setup`)' },
        });
      }
      return this.serveStatic(res, dir, path === '/' ? 'index.html' : decodeSegment(path.slice(1)));
    }
    return this.send(res, 404, { error: { code: 'not_found', message: `no route ${req.method} ${path.slice(0, 200)}` } });
  }

  private send(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
    res.end(JSON.stringify(body));
  }

  private sendPage(res: ServerResponse, status: number, html: string): void {
    res.writeHead(status, {
      'Content-Type': 'text/html; charset=utf-8',
      'Cache-Control': 'no-store',
      'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'",
    });
    res.end(html);
  }

  private serveStatic(res: ServerResponse, root: string, rel: string): void {
    const file = normalize(join(root, rel));
    if (rel.includes('\0') || !file.startsWith(root + sep) || !existsSync(file) || !statSync(file).isFile()) {
      return this.send(res, 404, { error: { code: 'not_found', message: 'no such file' } });
    }
    res.writeHead(200, {
      'Content-Type': MIME[file.slice(file.lastIndexOf('.'))] ?? 'application/octet-stream',
      'Content-Security-Policy': `default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self' ws://127.0.0.1:${this.port}`,
    });
    createReadStream(file)
      .on('error', () => res.destroy())
      .pipe(res);
  }
}
