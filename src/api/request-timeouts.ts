import type { IncomingMessage, Server, ServerResponse } from 'node:http';

export interface RequestTimeouts {
  /** How long a request may take to arrive whole (headers and body); 0: no limit. Node's default is 300 s. */
  requestMs: number;
  /** How long the headers may take; applies to every request, streaming ones too. Node's default is 60 s. */
  headersMs: number;
}

export const DEFAULT_REQUEST_TIMEOUTS: RequestTimeouts = { requestMs: 300_000, headersMs: 60_000 };

/**
 * Node's `server.requestTimeout` (300 s) counts from the request's first byte to its last, whatever
 * the route, so an upload that streams a large file for longer than five minutes is cut with a 408
 * however steadily its bytes come. Node has no per-request switch, so its server-wide cap is turned
 * off and this applies the same limit per request, except to the routes `streaming` names (the file
 * panel's uploads and downloads), which may take as long as their bytes take. The headers timeout
 * stays Node's own, for every request.
 */
export function applyRequestTimeouts(server: Server, timeouts: RequestTimeouts, streaming: (req: IncomingMessage) => boolean): void {
  server.requestTimeout = 0;
  server.headersTimeout = timeouts.headersMs;
  if (timeouts.requestMs <= 0) return;
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (streaming(req)) return;
    const timer = setTimeout(() => {
      if (req.complete) return; // it all arrived: the answer may take its time
      if (!res.headersSent) {
        const body = JSON.stringify({
          error: { code: 'timeout', message: `the request did not arrive whole within ${Math.round(timeouts.requestMs / 1000)} s` },
        });
        res.writeHead(408, { 'Content-Type': 'application/json', Connection: 'close', 'Content-Length': Buffer.byteLength(body) });
        res.end(body);
      }
      req.socket.destroySoon();
    }, timeouts.requestMs);
    timer.unref();
    const clear = () => clearTimeout(timer);
    req.once('end', clear);
    res.once('close', clear);
  });
}

/** Whether a request's path (without its query) is one of `paths`. */
export function pathIs(req: IncomingMessage, paths: readonly string[]): boolean {
  const url = req.url ?? '';
  const q = url.indexOf('?');
  return paths.includes(q < 0 ? url : url.slice(0, q));
}
