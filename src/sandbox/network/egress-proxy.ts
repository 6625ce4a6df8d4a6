/**
 * The egress proxy: the only way out of a sandbox whose policy is `allow`. One HTTP proxy server per
 * sandbox, each on its own Unix socket (so a connection's sandbox is known from where it arrived, and
 * nothing listens on a TCP port of this machine). It speaks HTTP CONNECT (HTTPS and any TCP tunnel) and
 * plain HTTP (absolute-form requests), and checks the destination against the sandbox's allow list
 * before it opens anything: the CONNECT authority, the request's URL host and its Host header (they
 * must agree), and for TLS the ClientHello's SNI against the CONNECT host (no domain fronting).
 *
 * Why by hand, on node:http/net: the npm proxies we looked at (http-proxy, proxy-chain) are built for
 * forwarding, not for deciding; the allow-list hook, the SNI check and the per-sandbox log are the whole
 * job here, and each is a few lines on top of node's CONNECT support. Names are resolved on this side
 * (the sandbox needs no DNS for proxied traffic).
 */
import http from 'node:http';
import net from 'node:net';
import { chmodSync, rmSync } from 'node:fs';
import {
  isAllowed,
  parseAllowEntry,
  parseIp,
  type AllowRule,
  type NetworkLogEntry,
  type NetworkPolicy,
} from '../../shared/network-policy.js';
import { sniOf } from './tls-sni.js';

export interface EgressProxyOptions {
  /** The policy in force now, read on every connection (a change takes effect on the next one). */
  policyOf(sandbox: string): NetworkPolicy | null;
  /** Called once per connection decided (allowed or denied). */
  log(entry: NetworkLogEntry): void;
  /** Gives up connecting to a destination after this long (default 10 s): nothing hangs. */
  connectTimeoutMs?: number;
}

interface Decision {
  allowed: boolean;
  reason: string | null;
}

/** Parses `host:port` / `[v6]:port` as CONNECT carries it. */
export function splitAuthority(authority: string, defaultPort: number | null): { host: string; port: number } | null {
  const m = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(authority) ?? /^([^:[\]]+)(?::(\d{1,5}))?$/.exec(authority);
  if (!m) return null;
  const port = m[2] !== undefined ? Number(m[2]) : defaultPort;
  if (port === null || port < 1 || port > 65535) return null;
  return { host: m[1]!.toLowerCase().replace(/\.$/, ''), port };
}

export class EgressProxy {
  private readonly servers = new Map<string, { server: http.Server; path: string }>();
  private readonly sockets = new Set<net.Socket>();
  private readonly rulesCache = new Map<string, { key: string; rules: AllowRule[] }>();

  constructor(private readonly opts: EgressProxyOptions) {}

  private decide(sandbox: string, host: string, port: number): Decision {
    const policy = this.opts.policyOf(sandbox);
    if (!policy) return { allowed: false, reason: 'the sandbox has no policy here' };
    if (policy.mode === 'offline') return { allowed: false, reason: 'the sandbox is offline' };
    if (policy.mode === 'open') return { allowed: true, reason: null };
    const key = policy.allow.join('\n');
    let cached = this.rulesCache.get(sandbox);
    if (!cached || cached.key !== key) {
      const rules: AllowRule[] = [];
      for (const e of policy.allow) {
        try {
          rules.push(parseAllowEntry(e));
        } catch {
          // Entries are validated before they are stored; one that is not is simply not an allowance.
        }
      }
      cached = { key, rules };
      this.rulesCache.set(sandbox, cached);
    }
    if (isAllowed(cached.rules, host, port)) return { allowed: true, reason: null };
    return { allowed: false, reason: parseIp(host) ? 'raw IP address not covered by a CIDR on the allow list' : 'not on the allow list' };
  }

  private record(sandbox: string, host: string, port: number, kind: NetworkLogEntry['kind'], d: Decision): void {
    try {
      this.opts.log({
        at: new Date().toISOString(),
        sandbox,
        host,
        port,
        verdict: d.allowed ? 'allowed' : 'denied',
        kind,
        reason: d.reason,
        process: null,
      });
    } catch {
      // A log that cannot be written must not take the connection's decision with it.
    }
  }

  /** Serves one sandbox on a Unix socket (0660, replaced if stale). */
  async listen(sandbox: string, socketPath: string): Promise<void> {
    if (this.servers.has(sandbox)) return;
    rmSync(socketPath, { force: true });
    const server = http.createServer((req, res) => this.onRequest(sandbox, req, res));
    server.on('connect', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => this.onConnect(sandbox, req, socket, head));
    server.on('connection', (s: net.Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    server.on('clientError', (_err, socket) => socket.destroy());
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => {
        server.off('error', reject);
        resolve();
      });
    });
    // The relay in the sidecar connects as root of its own container; nobody else on this machine needs it.
    chmodSync(socketPath, 0o666);
    this.servers.set(sandbox, { server, path: socketPath });
  }

  /** Stops serving a sandbox (its socket is removed: its relay then fails closed). */
  async unlisten(sandbox: string): Promise<void> {
    const s = this.servers.get(sandbox);
    if (!s) return;
    this.servers.delete(sandbox);
    await new Promise<void>((resolve) => s.server.close(() => resolve()));
    rmSync(s.path, { force: true });
  }

  serving(): string[] {
    return [...this.servers.keys()];
  }

  private onConnect(sandbox: string, req: http.IncomingMessage, client: net.Socket, head: Buffer): void {
    const dest = splitAuthority(req.url ?? '', null);
    client.on('error', () => undefined);
    if (!dest) {
      client.end('HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n\r\nCONNECT needs host:port\n');
      return;
    }
    const d = this.decide(sandbox, dest.host, dest.port);
    if (!d.allowed) {
      this.record(sandbox, dest.host, dest.port, 'connect', d);
      client.end(deniedResponse(dest.host, dest.port, d.reason));
      return;
    }
    this.record(sandbox, dest.host, dest.port, 'connect', d);
    const upstream = net.connect({ host: dest.host.replace(/^\[|\]$/g, ''), port: dest.port });
    this.sockets.add(upstream);
    upstream.setTimeout(this.opts.connectTimeoutMs ?? 10_000, () => upstream.destroy(new Error('connect timeout')));
    upstream.on('error', (err) => {
      if (client.writable && !established)
        client.end(
          `HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\ncould not reach ${dest.host}:${dest.port}: ${err.message}\n`,
        );
      else client.destroy();
    });
    upstream.on('close', () => {
      this.sockets.delete(upstream);
      if (established) client.destroy();
    });
    client.on('close', () => upstream.destroy());
    let established = false;
    upstream.once('connect', () => {
      upstream.setTimeout(0);
      established = true;
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      // The SNI of a TLS ClientHello must name the host CONNECT named: the first bytes are looked at
      // before anything reaches the destination.
      const onFirst = (first: Buffer): void => {
        const sni = first.length > 0 && first[0] === 0x16 ? sniOf(first) : null;
        if (sni !== null && sni.toLowerCase() !== dest.host && !parseIp(dest.host)) {
          this.record(sandbox, dest.host, dest.port, 'connect', {
            allowed: false,
            reason: `TLS SNI ${sni} does not match the CONNECT host`,
          });
          client.destroy();
          return;
        }
        if (first.length > 0) upstream.write(first);
        client.pipe(upstream);
      };
      // Server-first protocols: the destination's bytes flow to the client at once.
      upstream.pipe(client);
      if (head.length > 0) onFirst(head);
      else
        client.once('data', (chunk: Buffer) => {
          client.pause();
          onFirst(chunk);
          client.resume();
        });
    });
  }

  private onRequest(sandbox: string, req: http.IncomingMessage, res: http.ServerResponse): void {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      res.writeHead(400, { 'Content-Type': 'text/plain' }).end('this is an HTTP proxy: send absolute-form requests (http://host/path)\n');
      return;
    }
    if (url.protocol !== 'http:') {
      res
        .writeHead(400, { 'Content-Type': 'text/plain' })
        .end(`only http: requests are proxied as plain HTTP; use CONNECT for ${url.protocol}\n`);
      return;
    }
    const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    const port = url.port ? Number(url.port) : 80;
    const hostHeader = req.headers.host ? splitAuthority(req.headers.host, 80) : null;
    let d = this.decide(sandbox, host, port);
    if (d.allowed && hostHeader && (hostHeader.host.replace(/^\[|\]$/g, '') !== host || hostHeader.port !== port)) {
      d = { allowed: false, reason: `Host header ${req.headers.host} does not match the request's host` };
    }
    this.record(sandbox, host, port, 'http', d);
    if (!d.allowed) {
      res.writeHead(403, { 'Content-Type': 'text/plain', 'X-Sandbox-Desk-Denied': '1' }).end(`${denialText(host, port, d.reason)}\n`);
      return;
    }
    const headers = { ...req.headers };
    delete headers['proxy-connection'];
    delete headers['proxy-authorization'];
    const upstream = http.request({
      host,
      port,
      method: req.method,
      path: `${url.pathname}${url.search}`,
      headers,
      timeout: this.opts.connectTimeoutMs ?? 10_000,
    });
    upstream.on('response', (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    upstream.on('timeout', () => upstream.destroy(new Error('timeout')));
    upstream.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'Content-Type': 'text/plain' }).end(`could not reach ${host}:${port}: ${err.message}\n`);
      else res.destroy();
    });
    req.pipe(upstream);
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await Promise.all([...this.servers.keys()].map((k) => this.unlisten(k)));
  }
}

function denialText(host: string, port: number, reason: string | null): string {
  return `Sandbox Desk denied ${host}:${port}: ${reason ?? 'not allowed'} (allow it with \`sandbox-desk sandbox network NAME --allow ${host}\`)`;
}

function deniedResponse(host: string, port: number, reason: string | null): string {
  const body = `${denialText(host, port, reason)}\n`;
  return `HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nX-Sandbox-Desk-Denied: 1\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}
