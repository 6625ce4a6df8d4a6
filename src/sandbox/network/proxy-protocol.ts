/**
 * The one line the relay writes before a connection's bytes (PROXY protocol v1, the HAProxy format):
 * `PROXY TCP4 <src ip> <dst ip> <src port> <dst port>\r\n`. It tells the proxy which sandbox-side
 * address and port connected, which is how a log line finds its process. By hand because it is one
 * line; the npm parsers wrap whole servers.
 *
 * A connection that does not start with `PROXY ` (a relay from before the line existed, or a test
 * talking to the socket directly) is passed on untouched with no source.
 */
import type net from 'node:net';

export interface ProxySource {
  ip: string;
  port: number;
  /** The relay's address and port as the client reached them: with ip/port, the socket's exact 4-tuple (sock-diag.ts). */
  dstIp: string;
  dstPort: number;
}

/** v1 lines are at most 107 bytes; anything longer without a newline is not one. */
const MAX_LINE = 108;

export function parseProxyLine(line: string): ProxySource | null {
  const m = /^PROXY TCP[46] (\S+) (\S+) (\d{1,5}) (\d{1,5})$/.exec(line);
  if (!m) return null;
  const port = Number(m[3]);
  const dstPort = Number(m[4]);
  return port >= 1 && port <= 65535 && dstPort >= 1 && dstPort <= 65535 ? { ip: m[1]!, port, dstIp: m[2]!, dstPort } : null;
}

/**
 * Reads the PROXY line off `socket` (if there is one) and calls `then` with it; the bytes after it are
 * put back (unshift), so the next reader sees the stream as the client sent it.
 */
export function readProxyLine(socket: net.Socket, then: (source: ProxySource | null) => void): void {
  let buf: Buffer = Buffer.alloc(0);
  let done = false;
  const finish = (source: ProxySource | null, rest: Buffer): void => {
    done = true;
    socket.off('data', onData);
    socket.off('end', onEnd);
    socket.pause();
    if (rest.length > 0) socket.unshift(rest);
    then(source);
    socket.resume();
  };
  const onData = (chunk: Buffer): void => {
    if (done) return;
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
    const prefix = buf.subarray(0, 6).toString('latin1');
    if (!'PROXY '.startsWith(prefix) && !prefix.startsWith('PROXY ')) return finish(null, buf);
    const nl = buf.indexOf(0x0a);
    if (nl < 0) {
      if (buf.length >= MAX_LINE) finish(null, buf);
      return;
    }
    const line = buf.subarray(0, nl).toString('latin1').replace(/\r$/, '');
    finish(parseProxyLine(line), buf.subarray(nl + 1));
  };
  const onEnd = (): void => {
    if (!done) finish(null, buf);
  };
  socket.on('data', onData);
  socket.on('end', onEnd);
  socket.on('error', () => undefined);
}
