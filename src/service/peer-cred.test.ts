import { closeSync, createReadStream, mkdtempSync, openSync, rmSync } from 'node:fs';
import { createServer, connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admitSameUser, loadPeerCredAddon, peerCredAddonPath, peerCredentials } from './peer-cred.js';

// The real addon (dist/native/peer-cred.node, built by `npm run build` / pretest) on a real Unix socket.
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

  it('is asked in this process: the addon is found beside the build and loads', () => {
    expect(peerCredAddonPath()).toMatch(/[/\\]dist[/\\]native[/\\]peer-cred\.node$/);
    expect(typeof loadPeerCredAddon().peerCredentials).toBe('function');
  });

  it('names the connecting process and its uid, and leaves its bytes unread', async () => {
    const socket = await accepted;
    expect(peerCredentials(socket)).toEqual({ uid: process.getuid?.(), pid: process.pid });
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

  it('a descriptor that is not a socket: an error, not a guess', () => {
    const fd = openSync(dir, 'r');
    try {
      expect(() => loadPeerCredAddon().peerCredentials(fd)).toThrow(/fd \d+ has no peer credentials: Socket operation on non-socket/);
      expect(() => loadPeerCredAddon().peerCredentials(-1)).toThrow(/expected a file descriptor/);
      expect(() => (loadPeerCredAddon().peerCredentials as (x: unknown) => unknown)('3')).toThrow(/expected a file descriptor/);
    } finally {
      closeSync(fd);
    }
  });

  it('fails closed: a stream with no socket fd, or no addon, rejects the admission', async () => {
    const fd = openSync(dir, 'r');
    const stream = createReadStream('', { fd, autoClose: false });
    try {
      await expect(admitSameUser(stream as unknown as Socket)).rejects.toThrow(/no file descriptor to ask for its peer/);
    } finally {
      closeSync(fd);
    }
    const socket = await accepted;
    const missing = () => {
      throw new Error('the peer-uid check (dist/native/peer-cred.node) is not built: run `npm run build`');
    };
    await expect(admitSameUser(socket, process.getuid?.(), missing)).rejects.toThrow(/is not built: run `npm run build`/);
  });
});
