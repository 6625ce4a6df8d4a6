import { closeSync, createReadStream, mkdtempSync, openSync, rmSync } from 'node:fs';
import { createServer, connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admitSameUser, peerCredentials } from './peer-cred.js';

// The real helper (dist/native/peer-cred, built by `npm run build` / pretest) on a real Unix socket.
describe('peer credentials of a Unix socket connection', () => {
  let dir: string;
  let accepted: Promise<Socket>;
  let client: Socket;
  const server = createServer({ pauseOnConnect: true });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sd-peer-'));
    const path = join(dir, 's.sock');
    accepted = new Promise((resolve) => server.once('connection', resolve));
    await new Promise<void>((resolve) => server.listen(path, resolve));
    client = connect(path);
  });
  afterAll(() => {
    client.destroy();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('names the connecting process and its uid, and leaves its bytes unread', async () => {
    const socket = await accepted;
    expect(await peerCredentials(socket)).toEqual({ uid: process.getuid?.(), pid: process.pid });
    client.write('first bytes');
    socket.resume();
    const got = await new Promise<string>((resolve) => socket.once('data', (d: Buffer) => resolve(d.toString())));
    expect(got).toBe('first bytes');
  });

  it('admits the same uid; refuses another, saying who and why', async () => {
    const socket = await accepted;
    expect(await admitSameUser(socket)).toBeNull();
    expect(await admitSameUser(socket, 4242)).toBe(
      `the connecting process (pid ${process.pid}) runs as uid ${process.getuid?.()}; this service serves only uid 4242`,
    );
  });

  it('a descriptor that is not a socket: an error, not a guess', async () => {
    const fd = openSync(dir, 'r');
    const stream = createReadStream('', { fd, autoClose: false });
    await expect(peerCredentials(stream as unknown as Socket)).rejects.toThrow(/no peer credentials/);
    closeSync(fd);
  });
});
