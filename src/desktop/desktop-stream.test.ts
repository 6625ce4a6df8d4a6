import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, Socket, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { SandboxDeskError } from '../shared/errors.js';
import { DesktopStreams, type DesktopStream, type StreamOpened } from './desktop-stream.js';
import { folderSandbox } from './test/folder-sandbox.js';

/**
 * The opener and the in-sandbox relay together, with this machine as the "sandbox" (an empty exec
 * prefix: the relay is a local python3) and a fake Xvnc on a Unix socket in the desktop's place.
 */
function localEnv(dir: string, opts: { prefix?: string[]; inbox?: boolean } = {}): SandboxEnvironment {
  // Here the "sandbox" sees the host folder at the same path.
  return folderSandbox(dir, opts.prefix ?? [], opts.inbox === false ? {} : { inbox: { hostDir: dir, sandboxDir: dir } });
}

/** Processes whose argv names `marker` (the relays of this test only: their target path is unique). */
function relaysNaming(marker: string): number {
  const out = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.includes(marker) && l.includes('python3')).length;
}

async function until(check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('desktop streams through the inbox', () => {
  let dir: string;
  let target: string;
  let fake: Server;
  let peers: Socket[];
  let streams: DesktopStreams;
  let opened: StreamOpened[];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dstream-'));
    target = join(dir, 'rfb.sock');
    peers = [];
    // Greets like Xvnc, then echoes what it gets.
    fake = createServer((s) => {
      peers.push(s);
      s.on('error', () => undefined);
      s.write('RFB 003.008\n');
      s.on('data', (d) => s.write(d));
    });
    await new Promise<void>((r) => fake.listen(target, r));
    streams = new DesktopStreams(3000);
    opened = [];
    streams.onOpened((e) => opened.push(e));
  });

  afterEach(async () => {
    streams.dispose();
    for (const p of peers) p.destroy();
    await new Promise((r) => fake.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  const readSome = (s: DesktopStream, n: number): Promise<string> =>
    new Promise((resolve) => {
      let got = '';
      const on = (d: Buffer): void => {
        got += d.toString();
        if (got.length >= n) {
          s.stdout.off('data', on);
          resolve(got);
        }
      };
      s.stdout.on('data', on);
    });

  it('carries the bytes both ways over the inbox socket, not the exec stdio', async () => {
    const s = await streams.open(localEnv(dir), target, undefined);
    expect(opened).toEqual([{ via: 'inbox' }]);
    expect(s.stdout).toBeInstanceOf(Socket);
    expect(await readSome(s, 12)).toBe('RFB 003.008\n');
    const big = Buffer.alloc(3 * 2 ** 20, 7);
    const echoed = new Promise<number>((resolve) => {
      let n = 0;
      s.stdout.on('data', (d: Buffer) => {
        n += d.length;
        if (n >= big.length) resolve(n);
      });
    });
    s.stdin.write(big);
    expect(await echoed).toBe(big.length);
    s.kill();
  });

  it('a killed stream ends both sides: the relay exits and the desktop side sees the close', async () => {
    const s = await streams.open(localEnv(dir), target, undefined);
    await readSome(s, 12);
    expect(relaysNaming(target)).toBe(1);
    const closed = new Promise<void>((r) => s.once('close', r));
    s.kill();
    await closed;
    await until(() => peers.length === 1 && peers[0]!.destroyed);
    await until(() => relaysNaming(target) === 0);
  });

  it('ends when the desktop closes its side', async () => {
    const s = await streams.open(localEnv(dir), target, undefined);
    await readSome(s, 12);
    const closed = new Promise<void>((r) => s.once('close', r));
    peers[0]!.destroy();
    await closed;
    await until(() => relaysNaming(target) === 0);
  });

  it('says the desktop is gone when its socket is not there', async () => {
    const err = await streams.open(localEnv(dir), join(dir, 'nothing.sock'), undefined).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxDeskError);
    expect((err as SandboxDeskError).code).toBe('desktop_not_running');
    expect((err as Error).message).toContain('nothing.sock');
  });

  it('falls back to the stdio relay without an inbox, and says why', async () => {
    const s = await streams.open(localEnv(dir, { inbox: false }), target, undefined);
    expect(opened).toEqual([{ via: 'stdio', reason: expect.stringContaining('no inbox') }]);
    expect(await readSome(s, 12)).toBe('RFB 003.008\n');
    s.kill();
  });

  it('falls back when python3 cannot run there, and does not try the inbox again in that environment', async () => {
    // python3 missing: `env` says "No such file" and exits 127, as docker exec does.
    const env = localEnv(dir, {
      prefix: ['env', 'PYTHON_MISSING=1', 'sh', '-c', 'case "$1" in python3) exit 127;; esac; exec "$@"', 'sh'],
    });
    const s = await streams.open(env, target, undefined);
    expect(opened[0]).toEqual({ via: 'stdio', reason: expect.stringContaining('python3 could not run') });
    expect(await readSome(s, 12)).toBe('RFB 003.008\n');
    s.kill();
    const again = await streams.open(env, target, undefined);
    expect(opened[1]).toEqual(opened[0]);
    again.kill();
  });

  it('falls back after the timeout when the relay never reaches the inbox; nothing hangs', async () => {
    // A relay that starts but never connects (as through a mount that no longer shows the app's socket).
    const env = localEnv(dir, { prefix: ['sh', '-c', 'case "$1" in python3) exec sleep 30;; esac; exec "$@"', 'sh'] });
    const t0 = Date.now();
    const s = await streams.open(env, target, undefined);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(opened[0]).toEqual({ via: 'stdio', reason: expect.stringContaining('did not reach the inbox') });
    expect(await readSome(s, 12)).toBe('RFB 003.008\n');
    s.kill();
  });

  it('the relay exits when its stdin ends (the exec was killed), closing the stream', async () => {
    const s = await streams.open(localEnv(dir), target, undefined);
    await readSome(s, 12);
    // The exec's stdin is the relay's: ending it is what a killed `docker exec` does to the process inside.
    const child = (s as unknown as { child: { stdin: NodeJS.WritableStream } }).child;
    const closed = new Promise<void>((r) => s.once('close', r));
    child.stdin.end();
    await closed;
    await until(() => relaysNaming(target) === 0);
  });
});
