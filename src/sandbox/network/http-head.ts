/**
 * Reads one HTTP/1.x request head (request line + headers, up to the blank line) off a socket, for the
 * egress proxy. By hand, not node:http: the proxy needs the head only — after the decision the bytes
 * are piped raw both ways, so no parser sits on the data path (node's http server and client did, and
 * were most of the proxy's cost per byte). Strict on shape: a head the proxy cannot read is refused.
 */
import type net from 'node:net';

export interface RequestHead {
  method: string;
  target: string;
  version: string;
  /** In order, names as sent. */
  headers: Array<[string, string]>;
}

/** Heads larger than this are refused (431): nothing legitimate sends more through a proxy. */
export const MAX_HEAD_BYTES = 64 * 1024;

export function parseRequestHead(text: string): RequestHead | null {
  const lines = text.split('\r\n');
  const m = /^([A-Z]+) (\S+) (HTTP\/1\.[01])$/.exec(lines[0] ?? '');
  if (!m) return null;
  const headers: Array<[string, string]> = [];
  for (const line of lines.slice(1)) {
    if (line === '') continue;
    const i = line.indexOf(':');
    if (i <= 0 || /\s/.test(line.slice(0, i))) return null;
    headers.push([line.slice(0, i), line.slice(i + 1).trim()]);
  }
  return { method: m[1]!, target: m[2]!, version: m[3]!, headers };
}

export function headerOf(head: RequestHead, name: string): string | null {
  const n = name.toLowerCase();
  return head.headers.find(([k]) => k.toLowerCase() === n)?.[1] ?? null;
}

/**
 * Calls `then` with the head and the bytes after it (already read), or with null when the client sent
 * something that is not a head (or too much of it) or went away first.
 */
export function readRequestHead(
  socket: net.Socket,
  then: (head: RequestHead | null, rest: Buffer, why: 'bad' | 'too-large' | 'closed' | null) => void,
): void {
  let buf: Buffer = Buffer.alloc(0);
  let done = false;
  const finish = (head: RequestHead | null, rest: Buffer, why: 'bad' | 'too-large' | 'closed' | null): void => {
    if (done) return;
    done = true;
    socket.off('data', onData);
    socket.off('end', onEnd);
    socket.off('close', onEnd);
    socket.pause();
    then(head, rest, why);
  };
  const onData = (chunk: Buffer): void => {
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) {
      if (buf.length > MAX_HEAD_BYTES) finish(null, Buffer.alloc(0), 'too-large');
      return;
    }
    const head = parseRequestHead(buf.subarray(0, end).toString('latin1'));
    finish(head, buf.subarray(end + 4), head ? null : 'bad');
  };
  const onEnd = (): void => finish(null, Buffer.alloc(0), 'closed');
  socket.on('data', onData);
  socket.on('end', onEnd);
  socket.on('close', onEnd);
  socket.resume();
}
