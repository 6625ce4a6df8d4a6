import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createReadStream, existsSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { join, normalize, sep } from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import { RfbInputFilter, RfbProtocolError } from '../desktop/rfb-input-filter.js';
import { asSandboxDeskError, SandboxDeskError } from '../shared/errors.js';
import { projectRoot, resourcePath } from '../platform/project-root.js';
import type { StreamGrant } from './contract.js';
import { createDispatcher, type StreamIssuer } from './dispatch.js';
import type { SandboxDesk } from './sandbox-desk.js';
import { CLOSE, TicketBook } from './tickets.js';

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
  /** Also serve the agent bridge (MCP, streamable HTTP) at /mcp, behind the same token. */
  mcp?: { stepFromEnv?: string | undefined };
}

interface ScreenGrant {
  sandbox: string;
  viewerId: string;
}

const COOKIE = 'sdesk_token';

/** Above this many bytes queued for a viewer, stop reading from the sandbox until it drains. */
const HIGH_WATER = 4 * 1024 * 1024;
const LOW_WATER = 1024 * 1024;
/** How often a viewer's input gate re-reads the lease from the store (other processes may change it). */
const LEASE_REFRESH_MS = 250;

const MIME: Record<string, string> = { '.js': 'text/javascript', '.html': 'text/html; charset=utf-8', '.css': 'text/css', '.svg': 'image/svg+xml', '.png': 'image/png' };

/**
 * The app's local server, for the browser mode and for the Electron window's streams: loopback only,
 * a login token for every HTTP call (header, `?token=` once, then an HttpOnly SameSite cookie), a
 * single-use ticket for every stream, Host and Origin checks. It serves the renderer, the contract's
 * methods at POST /api/call/:method, the desktop viewer, and the screen and terminal streams.
 */
export class LocalServer implements StreamIssuer {
  readonly token = randomBytes(24).toString('hex');
  private readonly tickets: TicketBook<ScreenGrant>;
  private readonly terminalTickets: TicketBook<{ terminalId: string }>;
  private readonly dispatch: ReturnType<typeof createDispatcher>;
  private readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 1024 * 1024 });
  private readonly server: Server;
  private readonly streams = new Set<WebSocket>();
  port = 0;

  constructor(private readonly opts: LocalServerOptions) {
    this.tickets = new TicketBook<ScreenGrant>(opts.ticketTtlMs ?? 30_000);
    this.terminalTickets = new TicketBook<{ terminalId: string }>(opts.ticketTtlMs ?? 30_000);
    this.dispatch = createDispatcher(opts.desk, this);
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.on('upgrade', (req, socket, head) => this.upgrade(req, socket, head));
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.opts.port ?? 0, '127.0.0.1', () => resolve());
    });
    const addr = this.server.address();
    this.port = typeof addr === 'object' && addr ? addr.port : 0;
    return this.origin;
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
  issueScreenTicket(sandbox: string, viewerId = randomBytes(8).toString('hex')): StreamGrant & { viewerId: string } {
    const ticket = this.tickets.issue({ sandbox, viewerId });
    return { ticket, viewerId, url: `ws://127.0.0.1:${this.port}/ws/desktop/${encodeURIComponent(sandbox)}?ticket=${ticket}` };
  }

  screenTicket(sandbox: string, viewerId?: string): StreamGrant & { viewerId: string } {
    return this.issueScreenTicket(sandbox, viewerId);
  }

  terminalTicket(terminalId: string): StreamGrant {
    const ticket = this.terminalTickets.issue({ terminalId });
    // A terminal nobody attaches to before its ticket expires would be an orphaned shell: end it.
    setTimeout(() => {
      try {
        const t = this.opts.desk.io.terminal(terminalId);
        if (!t.everAttached) t.dispose();
      } catch {
        // already gone
      }
    }, (this.opts.ticketTtlMs ?? 30_000) + 5_000).unref();
    return { ticket, url: `ws://127.0.0.1:${this.port}/ws/terminal/${terminalId}?ticket=${ticket}` };
  }

  /** Calls one contract method, as the Electron bridge does. */
  call(method: unknown, params: unknown): ReturnType<ReturnType<typeof createDispatcher>> {
    return this.dispatch(method, params);
  }

  private get desktop(): SandboxDesk['desktop'] {
    return this.opts.desk.desktop;
  }

  async close(): Promise<void> {
    for (const ws of this.streams) ws.terminate();
    this.wss.close();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // ---- HTTP ---------------------------------------------------------------------------------------

  private hostAllowed(req: IncomingMessage): boolean {
    // DNS-rebinding guard: only our own loopback names.
    return req.headers.host === `127.0.0.1:${this.port}` || req.headers.host === `localhost:${this.port}`;
  }

  private tokenMatches(given: string | null | undefined): boolean {
    const a = Buffer.from(given ?? '');
    const b = Buffer.from(this.token);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  /** The token from the Authorization header, the `token` query parameter, or our cookie. */
  private authorized(req: IncomingMessage, url: URL): 'query' | 'other' | false {
    if (this.tokenMatches(url.searchParams.get('token'))) return 'query';
    if (this.tokenMatches(req.headers.authorization?.replace(/^Bearer /, ''))) return 'other';
    const cookie = /(?:^|;\s*)sdesk_token=([0-9a-f]+)/.exec(req.headers.cookie ?? '')?.[1];
    return this.tokenMatches(cookie) ? 'other' : false;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.origin);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    if (!this.hostAllowed(req)) return this.send(res, 403, { error: { code: 'refused', message: 'unexpected Host header' } });
    try {
      // noVNC's modules are public library code: served without the token (module imports carry none).
      if (req.method === 'GET' && url.pathname.startsWith('/novnc/')) return this.serveStatic(res, join(projectRoot(), 'node_modules', '@novnc', 'novnc'), url.pathname.slice('/novnc/'.length));
      if (req.method === 'GET' && url.pathname.startsWith('/viewer/')) return this.serveStatic(res, resourcePath('viewer'), url.pathname.slice('/viewer/'.length));
      const auth = this.authorized(req, url);
      if (!auth) return this.send(res, 401, { error: { code: 'refused', message: 'missing or wrong token: open the URL Sandbox Desk printed' } });
      // The URL's token becomes a cookie, so the page's own assets and calls carry it without the URL.
      if (auth === 'query') res.setHeader('Set-Cookie', `${COOKIE}=${this.token}; HttpOnly; SameSite=Strict; Path=/`);
      if (req.method !== 'GET' && !this.originAllowed(req.headers.origin)) {
        return this.send(res, 403, { error: { code: 'refused', message: 'cross-origin request refused' } });
      }

      const page = /^\/desktop\/([^/]+)$/.exec(url.pathname);
      if (req.method === 'GET' && page) return this.serveStatic(res, resourcePath('viewer'), 'index.html');

      if (url.pathname === '/mcp' && this.opts.mcp) return await this.serveMcp(req, res);

      const call = /^\/api\/call\/([A-Za-z]+)$/.exec(url.pathname);
      if (call && req.method === 'POST') {
        const r = await this.dispatch(call[1], await readJson(req));
        return this.send(res, 'ok' in r ? 200 : statusFor(r.error.code), r);
      }

      if (req.method === 'GET' && (url.pathname === '/' || url.pathname === '/index.html' || url.pathname.startsWith('/assets/'))) {
        const dir = this.opts.rendererDir ?? join(projectRoot(), 'dist', 'renderer');
        if (!existsSync(join(dir, 'index.html'))) {
          return this.send(res, 503, { error: { code: 'backend_unavailable', message: 'the UI is not built: run `npm run build:renderer` (or `npm run setup`)' } });
        }
        return this.serveStatic(res, dir, url.pathname === '/' ? 'index.html' : url.pathname.slice(1));
      }

      const api = /^\/api\/desktop\/([^/]+)\/(ticket|control|status)$/.exec(url.pathname);
      if (api) {
        const sandbox = decodeURIComponent(api[1]!);
        const body = req.method === 'POST' || req.method === 'DELETE' ? await readJson(req) : {};
        const viewerId = typeof body.viewerId === 'string' ? body.viewerId : undefined;
        if (api[2] === 'ticket' && req.method === 'POST') return this.send(res, 200, this.issueScreenTicket(sandbox, viewerId));
        if (api[2] === 'status' && req.method === 'GET') return this.send(res, 200, await this.desktop.status(sandbox));
        if (api[2] === 'control' && viewerId && req.method === 'POST') return this.send(res, 200, this.desktop.takeControl(sandbox, viewerId));
        if (api[2] === 'control' && viewerId && req.method === 'DELETE') return this.send(res, 200, this.desktop.giveBack(sandbox, viewerId));
        if (api[2] === 'control' && req.method === 'GET') return this.send(res, 200, this.desktop.lease(sandbox));
      }
      return this.send(res, 404, { error: { code: 'not_found', message: `no route ${req.method} ${url.pathname}` } });
    } catch (err) {
      const e = asSandboxDeskError(err);
      return this.send(res, e.code === 'invalid_input' ? 400 : e.code === 'not_found' ? 404 : 500, { error: e.toJSON() });
    }
  }

  /** One MCP request, stateless: a fresh protocol server per request over the shared core. */
  private async serveMcp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const [{ StreamableHTTPServerTransport }, { createMcpServer }] = await Promise.all([
      import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
      import('../mcp/mcp-server.js'),
    ]);
    const server = createMcpServer(this.opts.desk, { stepFromEnv: this.opts.mcp?.stepFromEnv });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.method === 'POST' ? await readJson(req) : undefined);
  }

  private send(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
    res.end(JSON.stringify(body));
  }

  private serveStatic(res: ServerResponse, root: string, rel: string): void {
    const file = normalize(join(root, rel));
    if (!file.startsWith(root + sep) || !existsSync(file) || !statSync(file).isFile()) {
      return this.send(res, 404, { error: { code: 'not_found', message: 'no such file' } });
    }
    res.writeHead(200, {
      'Content-Type': MIME[file.slice(file.lastIndexOf('.'))] ?? 'application/octet-stream',
      'Content-Security-Policy': `default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self' ws://127.0.0.1:${this.port}`,
    });
    createReadStream(file).pipe(res);
  }

  // ---- streams ------------------------------------------------------------------------------------

  private originAllowed(origin: string | undefined): boolean {
    // Non-browser clients send no Origin; the ticket is what authenticates them.
    if (origin === undefined) return true;
    return [this.origin, `http://localhost:${this.port}`, ...(this.opts.extraOrigins ?? [])].includes(origin);
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', this.origin);
    const m = /^\/ws\/desktop\/([^/]+)$/.exec(url.pathname);
    const term = /^\/ws\/terminal\/([0-9a-f]+)$/.exec(url.pathname);
    if (!this.hostAllowed(req) || (!m && !term)) {
      socket.destroy();
      return;
    }
    if (term) {
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        if (!this.originAllowed(req.headers.origin)) return ws.close(CLOSE.originRefused, 'origin refused');
        const redeemed = this.terminalTickets.redeem(url.searchParams.get('ticket'));
        if (!redeemed.ok) return ws.close(redeemed.code, redeemed.reason);
        if (redeemed.grant.terminalId !== term[1]) return ws.close(CLOSE.ticketUnknown, 'ticket is for another terminal');
        this.pipeTerminal(ws, redeemed.grant.terminalId);
      });
      return;
    }
    if (!m) return;
    // Refusals are sent as close codes after the handshake, so a client can tell them apart.
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      if (!this.originAllowed(req.headers.origin)) return ws.close(CLOSE.originRefused, 'origin refused');
      const redeemed = this.tickets.redeem(url.searchParams.get('ticket'));
      if (!redeemed.ok) return ws.close(redeemed.code, redeemed.reason);
      if (redeemed.grant.sandbox !== decodeURIComponent(m[1]!)) return ws.close(CLOSE.ticketUnknown, 'ticket is for another sandbox');
      void this.pipeScreen(ws, redeemed.grant);
    });
  }

  /** One terminal: PTY bytes both ways; the terminal ends when its viewer goes. */
  private pipeTerminal(ws: WebSocket, terminalId: string): void {
    let terminal;
    try {
      terminal = this.opts.desk.io.terminal(terminalId);
    } catch {
      return ws.close(CLOSE.streamGone, 'terminal gone');
    }
    this.streams.add(ws);
    terminal.attach({
      send: (data, done) => ws.send(data, { binary: true }, () => done()),
      get bufferedAmount() {
        return ws.bufferedAmount;
      },
    });
    ws.on('message', (data: Buffer) => terminal.write(data));
    const closeOnExit = (): void => {
      if (ws.readyState === ws.OPEN) ws.close(1000, 'shell exited');
    };
    const exitSub = terminal.onExit(closeOnExit);
    if (terminal.exited) closeOnExit();
    ws.on('close', () => {
      exitSub.dispose();
      this.streams.delete(ws);
      terminal.detach();
      terminal.dispose();
    });
  }

  /** One viewer: RFB bytes both ways between the WebSocket and an exec relay, input gated by the lease. */
  private async pipeScreen(ws: WebSocket, grant: ScreenGrant): Promise<void> {
    this.streams.add(ws);
    let relay;
    try {
      relay = await this.desktop.openScreenStream(grant.sandbox);
    } catch (err) {
      this.streams.delete(ws);
      return ws.close(CLOSE.streamGone, asSandboxDeskError(err).message.slice(0, 120));
    }
    let lease = this.desktop.lease(grant.sandbox);
    let leaseReadAt = Date.now();
    const filter = new RfbInputFilter({
      mayControl: () => {
        if (Date.now() - leaseReadAt > LEASE_REFRESH_MS) {
          lease = this.desktop.lease(grant.sandbox);
          leaseReadAt = Date.now();
        }
        return lease.holder === 'human' && lease.viewerId === grant.viewerId;
      },
    });

    relay.stdout.on('data', (chunk: Buffer) => {
      ws.send(chunk, { binary: true }, () => {
        if (relay.stdout.isPaused() && ws.bufferedAmount < LOW_WATER) relay.stdout.resume();
      });
      if (ws.bufferedAmount > HIGH_WATER) relay.stdout.pause();
    });
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (!isBinary) return ws.close(CLOSE.protocolError, 'binary frames only');
      let out: Buffer;
      try {
        out = filter.push(data);
      } catch (err) {
        return ws.close(CLOSE.protocolError, err instanceof RfbProtocolError ? err.reason : 'protocol error');
      }
      if (out.length && !relay.stdin.write(out)) {
        ws.pause();
        relay.stdin.once('drain', () => ws.resume());
      }
    });
    relay.on('close', () => {
      if (ws.readyState === ws.OPEN) ws.close(CLOSE.streamGone, 'screen gone');
    });
    ws.on('close', (code) => {
      this.streams.delete(ws);
      relay.kill();
      // A holder who leaves cleanly (any close frame: noVNC sends none with a code, so 1005) hands the
      // screen back; a dropped link (1006, no close frame) keeps the human in control.
      if (code !== 1006) this.desktop.giveBack(grant.sandbox, grant.viewerId);
    });
  }
}

/** HTTP status for an error code (the body says the rest). */
function statusFor(code: string): number {
  if (code === 'invalid_input' || code === 'unknown_backend' || code === 'cwd_unresolved') return 400;
  if (code === 'not_found' || code === 'image_not_found' || code === 'sandbox_missing') return 404;
  if (code === 'name_taken' || code === 'refused' || code === 'human_has_control' || code === 'placement_refused' || code === 'sandbox_not_running' || code === 'desktop_not_running') return 409;
  if (code === 'internal') return 500;
  return 503;
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  let raw = '';
  for await (const chunk of req) {
    raw += chunk;
    if (raw.length > 64 * 1024) throw new SandboxDeskError('invalid_input', 'request body too large');
  }
  if (!raw) return {};
  try {
    const v = JSON.parse(raw) as unknown;
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : {};
  } catch {
    throw new SandboxDeskError('invalid_input', 'request body is not JSON');
  }
}
