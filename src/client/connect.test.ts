import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { probeService } from './connect.js';

/**
 * A socket whose server resets each connection, as a service killed a moment ago does while it exits: it
 * closes with the request unread (a Unix socket closed with unread bytes resets its peer).
 */
function resetting(path: string, onReset: (n: number) => void): Promise<Server> {
  let n = 0;
  const server = createServer({ pauseOnConnect: true }, (socket) => {
    setTimeout(() => {
      socket.destroy();
      onReset(++n);
    }, 30);
  });
  return new Promise((resolve) => server.listen(path, () => resolve(server)));
}

describe('probeService', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const socketIn = () => {
    const dir = mkdtempSync(join(tmpdir(), 'sdesk-probe-'));
    dirs.push(dir);
    return join(dir, 'service.sock');
  };

  it('a service that resets connections and then is gone is a stale socket (null), not a refusal', async () => {
    const path = socketIn();
    const server = await resetting(path, (n) => {
      if (n === 2) server.close();
    });
    await expect(probeService(path, 2000)).resolves.toBeNull();
  });

  it('a socket that keeps resetting is still reported, after a few tries, with what happened', async () => {
    const path = socketIn();
    const server = await resetting(path, () => undefined);
    try {
      await expect(probeService(path, 2000)).rejects.toThrow(/cannot talk to the service at .*service\.sock/);
    } finally {
      server.close();
    }
  });
});
