import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { SandboxDeskError } from '../shared/errors.js';
import type { IDisposable } from '../shared/lifecycle.js';

/**
 * The desktop browser's DevTools endpoint on this machine's loopback. Chromium inside the sandbox has
 * no DevTools port (it speaks CDP on a pipe, see resources/desktop/cdp-pipe.py); this serves what
 * CDP clients expect of one — `GET /json/version` with a `webSocketDebuggerUrl`, and that WebSocket —
 * and carries each WebSocket's messages to the pipe's relay as NUL-delimited JSON, over a stream the
 * caller opens (an exec relay as the desktop's user). So Playwright's `connectOverCDP(httpUrl)` works,
 * and only the app can reach the browser.
 *
 * While `refusal()` returns an error (a human holds the control lease) nothing reaches the browser:
 * /json/version and new WebSockets are refused, and open ones are *closed* (code 4403, the reason in
 * the close frame) — checked on every message and polled. Closed rather than paused: a paused CDP
 * connection leaves the client's calls hanging with no reason given, and would replay queued input
 * onto a page the human has since changed; a closed one tells the client why, and it reconnects once
 * the lease is back.
 */
export const CLOSE_HUMAN_HAS_CONTROL = 4403;

export interface CdpBridgeOptions {
  /** A new byte stream to the in-sandbox relay's socket (stdin → relay, stdout ← relay). */
  openUpstream: () => ChildProcessWithoutNullStreams;
  /** null while the agent may use the browser; otherwise why not (thrown / sent to the client). */
  refusal: () => SandboxDeskError | null;
  /** How often open connections re-check `refusal` between messages. */
  pollMs?: number;
  /**
   * How long /json/version waits for the browser's answer (default 5 s). A VM under TCG needs more: the
   * relay's start there (an SSH session, sudo, socat) alone can take several seconds.
   */
  answerTimeoutMs?: number;
}

export interface BrowserVersion {
  protocolVersion: string;
  product: string;
  revision: string;
  userAgent: string;
  jsVersion: string;
}

const NUL = Buffer.from([0]);

/** Splits a byte stream into NUL-terminated messages (the pipe's framing); keeps the partial tail. */
export class NulSplitter {
  private tail: Buffer[] = [];
  constructor(private readonly onMessage: (msg: Buffer) => void) {}

  push(chunk: Buffer): void {
    let start = 0;
    for (let i = chunk.indexOf(0); i !== -1; i = chunk.indexOf(0, start)) {
      const part = chunk.subarray(start, i);
      const msg = this.tail.length ? Buffer.concat([...this.tail, part]) : part;
      this.tail = [];
      start = i + 1;
      if (msg.length) this.onMessage(msg);
    }
    if (start < chunk.length) this.tail.push(chunk.subarray(start));
  }
}

function rawToBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

/** A close reason must fit in 123 bytes. */
function closeReason(err: SandboxDeskError): string {
  return Buffer.from(`${err.code}: ${err.message}`)
    .subarray(0, 120)
    .toString('utf8')
    .replace(/\uFFFD+$/, '');
}

export class CdpBridge implements IDisposable {
  private readonly live = new Map<WebSocket, ChildProcessWithoutNullStreams>();
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 256 * 1024 * 1024 });
  private readonly browserPath = `/devtools/browser/${randomBytes(12).toString('hex')}`;
  private poll: NodeJS.Timeout | null = null;
  private disposed = false;

  private constructor(
    private readonly server: Server,
    readonly localPort: number,
    private readonly opts: CdpBridgeOptions,
  ) {
    server.on('request', (req, res) => void this.onRequest(req, res));
    server.on('upgrade', (req, socket) => this.onUpgrade(req, socket));
  }

  static async listen(opts: CdpBridgeOptions): Promise<CdpBridge> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    return new CdpBridge(server, typeof address === 'object' && address ? address.port : 0, opts);
  }

  get httpUrl(): string {
    return `http://127.0.0.1:${this.localPort}`;
  }

  get webSocketDebuggerUrl(): string {
    return `ws://127.0.0.1:${this.localPort}${this.browserPath}`;
  }

  /** How many CDP WebSockets are open right now. */
  get connections(): number {
    return this.live.size;
  }

  /** One round trip to the browser (Browser.getVersion) through a fresh upstream. */
  version(timeoutMs = this.opts.answerTimeoutMs ?? 5000): Promise<BrowserVersion> {
    const up = this.opts.openUpstream();
    return new Promise<BrowserVersion>((resolve, reject) => {
      let stderr = '';
      const done = (fn: () => void): void => {
        clearTimeout(timer);
        up.kill();
        fn();
      };
      const timer = setTimeout(() => done(() => reject(new Error('no answer from the browser'))), timeoutMs);
      up.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      const split = new NulSplitter((msg) => {
        const m = JSON.parse(msg.toString('utf8')) as { id?: number; result?: BrowserVersion; error?: { message: string } };
        if (m.id !== 1) return;
        done(() => (m.result ? resolve(m.result) : reject(new Error(m.error?.message ?? 'Browser.getVersion failed'))));
      });
      up.stdout.on('data', (c: Buffer) => split.push(c));
      up.on('close', () => done(() => reject(new Error(stderr.trim() || 'the relay to the browser closed'))));
      up.stdin.write(JSON.stringify({ id: 1, method: 'Browser.getVersion' }) + '\0');
    });
  }

  /** Only this machine's own clients: loopback Host (no DNS rebinding), and no web page's Origin. */
  private foreign(req: IncomingMessage): string | null {
    if (req.headers.origin) return `requests from a web page (origin ${req.headers.origin}) are refused`;
    const host = req.headers.host ?? '';
    if (host !== `127.0.0.1:${this.localPort}` && host !== `localhost:${this.localPort}`)
      return `host ${JSON.stringify(host)} is not this endpoint`;
    return null;
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const send = (status: number, body: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify(body, null, 2) + '\n');
    };
    const foreign = this.foreign(req);
    if (foreign) return send(403, { error: { code: 'forbidden', message: foreign } });
    const path = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '');
    if (req.method !== 'GET' || path !== '/json/version') {
      return send(404, {
        error: {
          code: 'not_found',
          message: `${req.method} ${req.url} is not served here`,
          hint: 'this endpoint serves GET /json/version and the browser WebSocket it names',
        },
      });
    }
    const refusal = this.opts.refusal();
    if (refusal) return send(409, { error: { code: refusal.code, message: refusal.message, hint: refusal.hint } });
    try {
      const v = await this.version();
      send(200, {
        Browser: v.product,
        'Protocol-Version': v.protocolVersion,
        'User-Agent': v.userAgent,
        'V8-Version': v.jsVersion,
        'WebKit-Version': v.revision,
        webSocketDebuggerUrl: this.webSocketDebuggerUrl,
      });
    } catch (err) {
      send(502, { error: { code: 'backend_unavailable', message: `the desktop browser did not answer: ${(err as Error).message}` } });
    }
  }

  private onUpgrade(req: IncomingMessage, socket: Duplex): void {
    const reject = (status: string, message: string): void => {
      socket.end(`HTTP/1.1 ${status}\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n${message}\n`);
    };
    const foreign = this.foreign(req);
    if (foreign) return reject('403 Forbidden', foreign);
    if ((req.url ?? '').split('?')[0] !== this.browserPath)
      return reject('404 Not Found', `the browser's WebSocket is ${this.webSocketDebuggerUrl}`);
    const refusal = this.opts.refusal();
    if (refusal) return reject('409 Conflict', `${refusal.code}: ${refusal.message}`);
    this.wss.handleUpgrade(req, socket, Buffer.alloc(0), (ws) => this.pipe(ws));
  }

  private pipe(ws: WebSocket): void {
    if (this.disposed) return ws.close(1001, 'the endpoint is closing');
    const up = this.opts.openUpstream();
    this.live.set(ws, up);
    const split = new NulSplitter((msg) => ws.readyState === WebSocket.OPEN && ws.send(msg.toString('utf8')));
    up.stdout.on('data', (c: Buffer) => split.push(c));
    ws.on('message', (data) => {
      const refusal = this.opts.refusal();
      if (refusal) return this.refuse(ws, refusal);
      const buf = rawToBuffer(data);
      // A raw NUL would split one message into two on the pipe; JSON never has one unescaped.
      if (buf.includes(0)) return ws.close(1007, 'a CDP message must be JSON text without NUL bytes');
      up.stdin.write(Buffer.concat([buf, NUL]));
    });
    const end = (): void => {
      if (!this.live.has(ws)) return;
      this.live.delete(ws);
      up.kill();
      if (ws.readyState === WebSocket.OPEN) ws.close(1011, 'the connection to the desktop browser ended');
      if (this.live.size === 0) this.stopPolling();
    };
    ws.on('close', end);
    ws.on('error', end);
    up.on('close', end);
    this.startPolling();
  }

  private refuse(ws: WebSocket, err: SandboxDeskError): void {
    const up = this.live.get(ws);
    this.live.delete(ws);
    up?.kill();
    ws.close(CLOSE_HUMAN_HAS_CONTROL, closeReason(err));
    if (this.live.size === 0) this.stopPolling();
  }

  private startPolling(): void {
    if (this.poll) return;
    this.poll = setInterval(() => {
      const refusal = this.opts.refusal();
      if (refusal) for (const ws of [...this.live.keys()]) this.refuse(ws, refusal);
    }, this.opts.pollMs ?? 250);
    this.poll.unref();
  }

  private stopPolling(): void {
    if (this.poll) clearInterval(this.poll);
    this.poll = null;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.stopPolling();
    for (const [ws, up] of this.live) {
      up.kill();
      ws.terminate();
    }
    this.live.clear();
    this.wss.close();
    this.server.close();
    this.server.closeAllConnections();
  }
}
