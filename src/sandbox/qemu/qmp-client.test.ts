import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { qmpCommand } from './qmp-client.js';

/** A fake QMP server on a Unix socket that sends each message in pieces, as a real socket may. */
function fakeQmp(reply: (cmd: Record<string, unknown>) => Record<string, unknown>): Promise<{ path: string; server: Server; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'sdesk-qmp-'));
  const path = join(dir, 'qmp.sock');
  const server = createServer((sock: Socket) => {
    // Each message arrives in two chunks, the newline only in the second, 30 ms apart.
    const send = (msg: Record<string, unknown>): void => {
      const text = JSON.stringify(msg);
      sock.write(text.slice(0, 5));
      setTimeout(() => sock.write(text.slice(5) + '\n'), 30);
    };
    send({ QMP: { version: {}, capabilities: [] } });
    let buf = '';
    sock.setEncoding('utf8');
    sock.on('data', (c: string) => {
      buf += c;
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const cmd = JSON.parse(buf.slice(0, i)) as Record<string, unknown>;
        buf = buf.slice(i + 1);
        if (cmd.execute === 'qmp_capabilities') send({ return: {} });
        else {
          send({ event: 'POWERDOWN', timestamp: {} });
          setTimeout(() => send(reply(cmd)), 40);
        }
      }
    });
  });
  return new Promise((resolve) => server.listen(path, () => resolve({ path, server, dir })));
}

let cleanup: (() => void) | null = null;
afterEach(() => {
  cleanup?.();
  cleanup = null;
});

describe('qmpCommand', () => {
  it('reads replies that arrive in several chunks (the newline only in the last)', async () => {
    const f = await fakeQmp((cmd) => ({ return: { ran: cmd.execute } }));
    cleanup = () => (f.server.close(), rmSync(f.dir, { recursive: true, force: true }));
    await expect(qmpCommand(f.path, 'system_powerdown', undefined, 3000)).resolves.toEqual({ ran: 'system_powerdown' });
  });
  it('a QMP error is an error naming the command; silence is a timeout', async () => {
    const f = await fakeQmp(() => ({ error: { class: 'GenericError', desc: 'no such thing' } }));
    cleanup = () => (f.server.close(), rmSync(f.dir, { recursive: true, force: true }));
    await expect(qmpCommand(f.path, 'quit', undefined, 3000)).rejects.toThrow(/QMP quit failed: no such thing/);
    await expect(qmpCommand(f.path, 'quit', undefined, 20)).rejects.toThrow(/did not answer in time/);
  });
});
