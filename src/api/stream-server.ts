import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { DesktopStream } from '../desktop/desktop-stream.js';
import { RfbInputFilter, RfbProtocolError } from '../desktop/rfb/rfb-input-filter.js';
import { asSandboxDeskError } from '../shared/errors.js';
import { CLOSE } from '../shared/stream-close-codes.js';
import { STREAM_PATHS, type StreamGrant } from './contract.js';
import { pipeEvents } from './event-stream.js';
import { statusFor } from './http-status.js';
import { decodeSegment, parseRequestTarget } from './request-target.js';
import type { SandboxDesk } from './sandbox-desk.js';
import { TicketBook } from './tickets.js';
import { pipeLog, type LogGrant } from './log-stream.js';

interface ScreenGrant {
  sandbox: string;
  viewerId: string;
}

/** Above this many bytes queued for a viewer, stop reading from the sandbox until it drains. */
const HIGH_WATER = 4 * 1024 * 1024;
const LOW_WATER = 1024 * 1024;
/** How often a viewer's input gate re-reads the lease from the store (other processes may change it). */
const LEASE_REFRESH_MS = 250;

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
const DESKTOP_PATH = new RegExp(`^${escapeRe(STREAM_PATHS.desktop)}([^/]+)$`);
const TERMINAL_PATH = new RegExp(`^${escapeRe(STREAM_PATHS.terminal)}([0-9a-f]+)$`);
const LOGS_PATH = new RegExp(`^${escapeRe(STREAM_PATHS.logs)}([^/]+)$`);

export interface StreamServerOptions {
  desk: SandboxDesk;
  ticketTtlMs: number;
  /** The server's origin (`http://127.0.0.1:PORT`), read when a grant is issued (the port comes late). */
  origin: () => string;
  hostAllowed: (req: IncomingMessage) => boolean;
  originAllowed: (origin: string | undefined) => boolean;
}

/** Answers an upgrade that will not become a WebSocket with a real HTTP status, then closes. */
function refuseUpgrade(socket: Duplex, status: number, message: string): void {
  const body = JSON.stringify({ error: { code: status === 400 ? 'invalid_input' : status === 404 ? 'not_found' : 'refused', message } });
  if (socket.writable) {
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
  // A client that never reads the answer must not hold the socket open.
  setTimeout(() => socket.destroy(), 2_000).unref();
}

/**
 * The ticketed WebSocket streams: screens (RFB, input gated by the control lease) and terminals
 * (PTY bytes). Every upgrade is parsed inside one boundary: a malformed target, a bad escape or a
 * foreign Host gets an HTTP status, never an exception out of the 'upgrade' event.
 */
export class StreamServer {
  private readonly screenTickets: TicketBook<ScreenGrant>;
  private readonly terminalTickets: TicketBook<{ terminalId: string }>;
  private readonly logTickets: TicketBook<LogGrant>;
  private readonly eventTickets: TicketBook<{ events: true }>;
  private readonly wss: WebSocketServer;
  private readonly streams = new Set<WebSocket>();

  constructor(private readonly opts: StreamServerOptions) {
    // A pasted text arrives as one message: room for the clipboard cap, plus the other messages' headroom.
    const maxPayload = Math.max(1024 * 1024, opts.desk.config.clipboard.maxBytes + 64 * 1024);
    this.wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload });
    this.screenTickets = new TicketBook<ScreenGrant>(opts.ticketTtlMs);
    this.terminalTickets = new TicketBook<{ terminalId: string }>(opts.ticketTtlMs);
    this.logTickets = new TicketBook<LogGrant>(opts.ticketTtlMs);
    this.eventTickets = new TicketBook<{ events: true }>(opts.ticketTtlMs);
  }

  logTicket(grant: LogGrant): StreamGrant {
    const ticket = this.logTickets.issue(grant);
    return { ticket, url: `${this.wsOrigin()}${STREAM_PATHS.logs}${encodeURIComponent(grant.sandbox)}?ticket=${ticket}` };
  }

  eventsTicket(): StreamGrant {
    const ticket = this.eventTickets.issue({ events: true });
    return { ticket, url: `${this.wsOrigin()}${STREAM_PATHS.events}?ticket=${ticket}` };
  }

  private wsOrigin(): string {
    return this.opts.origin().replace(/^http:/, 'ws:');
  }

  screenTicket(sandbox: string, viewerId = randomBytes(8).toString('hex')): StreamGrant & { viewerId: string } {
    const ticket = this.screenTickets.issue({ sandbox, viewerId });
    return { ticket, viewerId, url: `${this.wsOrigin()}${STREAM_PATHS.desktop}${encodeURIComponent(sandbox)}?ticket=${ticket}` };
  }

  terminalTicket(terminalId: string): StreamGrant {
    const ticket = this.terminalTickets.issue({ terminalId });
    // A terminal nobody ever attaches to before its ticket expires would be an orphaned shell: end it.
    setTimeout(() => {
      try {
        const t = this.opts.desk.io.terminal(terminalId);
        if (!t.everAttached) t.dispose();
      } catch {
        // already gone
      }
    }, this.opts.ticketTtlMs + 5_000).unref();
    return { ticket, url: `${this.wsOrigin()}${STREAM_PATHS.terminal}${terminalId}?ticket=${ticket}` };
  }

  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    // The socket is ours from here: an error on it (a reset mid-handshake) must not become uncaught.
    socket.on('error', () => socket.destroy());
    try {
      this.route(req, socket, head);
    } catch (err) {
      const e = asSandboxDeskError(err);
      refuseUpgrade(socket, statusFor(e.code), e.message);
    }
  }

  private route(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    if (!this.opts.hostAllowed(req)) return refuseUpgrade(socket, 403, 'unexpected Host header');
    const target = parseRequestTarget(req.url);
    const ticket = target.query.get('ticket');
    const term = TERMINAL_PATH.exec(target.pathname);
    const screen = DESKTOP_PATH.exec(target.pathname);
    const logs = LOGS_PATH.exec(target.pathname);
    if (logs) return this.routeLogs(req, socket, head, decodeSegment(logs[1]!), ticket);
    if (target.pathname === STREAM_PATHS.events) {
      return this.wss.handleUpgrade(req, socket, head, (ws) => {
        if (!this.opts.originAllowed(req.headers.origin)) return ws.close(CLOSE.originRefused, 'origin refused');
        const redeemed = this.eventTickets.redeem(ticket);
        if (!redeemed.ok) return ws.close(redeemed.code, redeemed.reason);
        this.streams.add(ws);
        // While a window listens, the core samples every running sandbox's CPU and memory (`stats` events).
        const stats = this.opts.desk.stats.watch();
        ws.on('close', () => {
          this.streams.delete(ws);
          stats.dispose();
        });
        pipeEvents(ws, this.opts.desk.events, { since: target.query.get('since'), epoch: target.query.get('epoch') });
      });
    }
    if (!term && !screen) return refuseUpgrade(socket, 404, `no stream at ${target.pathname.slice(0, 200)}`);
    // Decoded before the handshake, so a bad escape is a 400 here, not an exception in a callback.
    const sandbox = screen ? decodeSegment(screen[1]!) : null;
    // Refusals after this point are close codes after the handshake, so a client can tell them apart.
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      try {
        if (!this.opts.originAllowed(req.headers.origin)) return ws.close(CLOSE.originRefused, 'origin refused');
        if (term) {
          const redeemed = this.terminalTickets.redeem(ticket);
          if (!redeemed.ok) return ws.close(redeemed.code, redeemed.reason);
          if (redeemed.grant.terminalId !== term[1]) return ws.close(CLOSE.ticketUnknown, 'ticket is for another terminal');
          return this.pipeTerminal(ws, redeemed.grant.terminalId);
        }
        const redeemed = this.screenTickets.redeem(ticket);
        if (!redeemed.ok) return ws.close(redeemed.code, redeemed.reason);
        if (redeemed.grant.sandbox !== sandbox) return ws.close(CLOSE.ticketUnknown, 'ticket is for another sandbox');
        void this.pipeScreen(ws, redeemed.grant);
      } catch (err) {
        ws.close(CLOSE.streamGone, asSandboxDeskError(err).message.slice(0, 120));
      }
    });
  }

  /** A log follower: the same ticket rules as the other streams (single-use, for this sandbox only). */
  private routeLogs(req: IncomingMessage, socket: Duplex, head: Buffer, sandbox: string, ticket: string | null): void {
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      if (!this.opts.originAllowed(req.headers.origin)) return ws.close(CLOSE.originRefused, 'origin refused');
      const redeemed = this.logTickets.redeem(ticket);
      if (!redeemed.ok) return ws.close(redeemed.code, redeemed.reason);
      if (redeemed.grant.sandbox !== sandbox) return ws.close(CLOSE.ticketUnknown, 'ticket is for another sandbox');
      this.streams.add(ws);
      // The viewer only listens: anything it sends is ignored.
      const piped = pipeLog(ws, this.opts.desk.logs, redeemed.grant);
      ws.on('close', () => {
        this.streams.delete(ws);
        void piped.then((stop) => stop());
      });
    });
  }

  close(): void {
    for (const ws of this.streams) ws.terminate();
    this.wss.close();
  }

  /**
   * One viewer of a terminal: the scrollback, then PTY bytes both ways. The viewer going (a window
   * switching sandboxes, a reload) only detaches it: the shell runs on until `terminalClose`.
   */
  private pipeTerminal(ws: WebSocket, terminalId: string): void {
    let terminal;
    try {
      terminal = this.opts.desk.io.terminal(terminalId);
    } catch {
      return ws.close(CLOSE.streamGone, 'terminal gone');
    }
    this.streams.add(ws);
    const attached = terminal.attach({
      send: (data, done) => ws.send(data, { binary: true }, () => done()),
      get bufferedAmount() {
        return ws.bufferedAmount;
      },
    });
    ws.on('message', (data: Buffer) => terminal.write(data));
    const closeOnExit = (): void => {
      if (ws.readyState !== ws.OPEN) return;
      // A restore ends the shell with the old sandbox; the terminal comes back under this id.
      if (this.opts.desk.io.isRestarting(terminalId)) ws.close(CLOSE.restarting, 'the sandbox is being restored');
      else ws.close(1000, 'shell exited');
    };
    const exitSub = terminal.onExit(closeOnExit);
    if (terminal.exited) closeOnExit();
    ws.on('close', () => {
      exitSub.dispose();
      this.streams.delete(ws);
      attached.dispose();
    });
  }

  /** One viewer: RFB bytes both ways between the WebSocket and an exec relay, input gated by the lease. */
  private async pipeScreen(ws: WebSocket, grant: ScreenGrant): Promise<void> {
    const desktop = this.opts.desk.desktop;
    this.streams.add(ws);
    // The screen going away (a restore, a restart or kill of the sandbox, the desktop stopped or its
    // relay killed — all things the sandbox or an agent token can cause) ends the stream from this
    // side. That is not the viewer leaving: the viewer reconnects with the same viewer id and must
    // find the lease still its own, or an agent could take the screen by making it blink.
    let screenGone = false;
    let relay: DesktopStream | null = null;
    // Listened to from the start: a viewer that leaves while its relay is still opening is told apart too.
    ws.on('close', (code) => {
      this.streams.delete(ws);
      relay?.kill();
      // Only the viewer's own leaving hands the screen back: a holder who closes cleanly (any close
      // frame it started: noVNC sends none with a code, so 1005). A dropped link (1006, no close frame)
      // and a stream this side ended because the screen went away keep the human in control.
      // Giving back also puts the screen back to the agent's size (control-handover.ts), in the background.
      if (code !== 1006 && !screenGone) void desktop.giveBack(grant.sandbox, grant.viewerId).catch(() => undefined);
    });
    try {
      relay = await desktop.openScreenStream(grant.sandbox);
    } catch (err) {
      screenGone = true;
      return ws.close(CLOSE.streamGone, asSandboxDeskError(err).message.slice(0, 120));
    }
    // The viewer left while the relay opened: nobody would end it.
    if (ws.readyState !== ws.OPEN) return void relay.kill();
    const opened = relay;
    let lease = desktop.lease(grant.sandbox);
    let leaseReadAt = Date.now();
    const filter = new RfbInputFilter({
      maxClipboardBytes: this.opts.desk.config.clipboard.maxBytes,
      mayControl: () => {
        if (Date.now() - leaseReadAt > LEASE_REFRESH_MS) {
          lease = desktop.lease(grant.sandbox);
          leaseReadAt = Date.now();
        }
        return lease.holder === 'human' && lease.viewerId === grant.viewerId;
      },
    });

    opened.stdout.on('data', (chunk: Buffer) => {
      ws.send(chunk, { binary: true }, () => {
        if (opened.stdout.isPaused() && ws.bufferedAmount < LOW_WATER) opened.stdout.resume();
      });
      if (ws.bufferedAmount > HIGH_WATER) opened.stdout.pause();
    });
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (!isBinary) return ws.close(CLOSE.protocolError, 'binary frames only');
      let out: Buffer;
      try {
        out = filter.push(data);
      } catch (err) {
        return ws.close(CLOSE.protocolError, err instanceof RfbProtocolError ? err.reason : 'protocol error');
      }
      if (out.length && !opened.stdin.write(out)) {
        ws.pause();
        opened.stdin.once('drain', () => ws.resume());
      }
    });
    opened.on('close', () => {
      if (ws.readyState !== ws.OPEN) return;
      screenGone = true;
      ws.close(CLOSE.streamGone, 'screen gone');
    });
  }
}
