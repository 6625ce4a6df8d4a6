import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { parseProxyLine, readProxyLine } from './proxy-protocol.js';

/** One connection over a real loopback socket: what `readProxyLine` gave, and what was read after it. */
async function through(bytes: string[]): Promise<{ source: unknown; rest: string }> {
  let resolve!: (v: { source: unknown; rest: string }) => void;
  const done = new Promise<{ source: unknown; rest: string }>((r) => (resolve = r));
  const server = net.createServer((s) =>
    readProxyLine(s, (source) => {
      let rest = '';
      s.on('data', (d) => (rest += d.toString('latin1')));
      s.on('end', () => resolve({ source, rest }));
    }),
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const c = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  for (const b of bytes) {
    c.write(b);
    await new Promise((r) => setTimeout(r, 20));
  }
  c.end();
  const out = await done;
  server.close();
  return out;
}

describe('the relay’s PROXY line', () => {
  it('parses v1 lines and refuses others', () => {
    expect(parseProxyLine('PROXY TCP4 172.20.0.3 172.20.0.2 40312 3128')).toEqual({
      ip: '172.20.0.3',
      port: 40312,
      dstIp: '172.20.0.2',
      dstPort: 3128,
    });
    expect(parseProxyLine('PROXY TCP4 a b 0 3128')).toBeNull();
    expect(parseProxyLine('PROXY TCP4 a b 5000 0')).toBeNull();
    expect(parseProxyLine('PROXY UNKNOWN')).toBeNull();
    expect(parseProxyLine('GET / HTTP/1.1')).toBeNull();
  });

  it('is taken off the stream even when it arrives in pieces; the bytes after it are kept', async () => {
    expect(await through(['PROX', 'Y TCP4 10.0.0.2 10.0.0.1 5000 3128\r\nGET /', ' HTTP/1.1\r\n'])).toEqual({
      source: { ip: '10.0.0.2', port: 5000, dstIp: '10.0.0.1', dstPort: 3128 },
      rest: 'GET / HTTP/1.1\r\n',
    });
  });

  it('a stream without one is passed on untouched, with no source', async () => {
    expect(await through(['GET / HTTP/1.1\r\n\r\n'])).toEqual({ source: null, rest: 'GET / HTTP/1.1\r\n\r\n' });
  });
});
