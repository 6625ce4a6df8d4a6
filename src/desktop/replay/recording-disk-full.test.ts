import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { RfbClient } from '../rfb/rfb-client.js';
import { fakeRfbServer, type FakeRfbServer } from '../rfb/test/fake-rfb-server.js';
import { DesktopRecordings } from './desktop-recordings.js';
import { fileSegmentWriter, type SegmentWriter } from './screen-recorder.js';

/**
 * Issue 35.5: the data disk filling while the screen is recorded killed `serve` with an uncaught
 * ENOSPC — from writing the recorder's warning file (in a promise nobody awaited), and `desktop
 * status`/`start` threw it from taking the recorder's lock. The fs boundary is faked: while
 * `disk.full`, every small-file write of node:fs (and a mkdir of a new folder) fails as a full disk
 * does, and so do the segment writes.
 */
const disk = vi.hoisted(() => ({ full: false }));
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  const enospc = (syscall: string) =>
    Object.assign(new Error(`ENOSPC: no space left on device, ${syscall}`), { code: 'ENOSPC', errno: -28, syscall });
  return {
    ...fs,
    writeFileSync: (...a: Parameters<typeof fs.writeFileSync>) => {
      if (disk.full) throw enospc('write');
      return fs.writeFileSync(...a);
    },
    writeSync: (...a: Parameters<typeof fs.writeSync>) => {
      if (disk.full) throw enospc('write');
      return (fs.writeSync as (...x: unknown[]) => number)(...a);
    },
    mkdirSync: (...a: Parameters<typeof fs.mkdirSync>) => {
      if (disk.full && !fs.existsSync(a[0])) throw enospc('mkdir');
      return fs.mkdirSync(...a);
    },
  };
});

const fullWhenTold: SegmentWriter = {
  async open(file) {
    if (disk.full) throw Object.assign(new Error('ENOSPC: no space left on device, open'), { code: 'ENOSPC' });
    const f = await fileSegmentWriter.open(file);
    return {
      write: async (data) => {
        if (disk.full) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        await f.write(data);
      },
      close: () => f.close(),
    };
  },
};

/** Errors nobody handled: what used to end the process. */
const unhandled: unknown[] = [];
const onUnhandled = (err: unknown) => unhandled.push(err);
beforeAll(() => {
  process.on('unhandledRejection', onUnhandled);
  process.on('uncaughtException', onUnhandled);
});
afterAll(() => {
  process.off('unhandledRejection', onUnhandled);
  process.off('uncaughtException', onUnhandled);
});

const dirs: string[] = [];
const open: DesktopRecordings[] = [];
afterEach(async () => {
  disk.full = false;
  for (const r of open.splice(0)) await r.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function recordings(live: () => Promise<RfbClient>) {
  const dir = mkdtempSync(join(tmpdir(), 'recscreen-full-'));
  dirs.push(dir);
  const warnings: Array<{ sandbox: string; message: string }> = [];
  const r = new DesktopRecordings({
    dir,
    enabled: true,
    live,
    retryMs: 20,
    recorder: { writer: fullWhenTold },
    onWarning: (sandbox, message) => warnings.push({ sandbox, message }),
  });
  open.push(r);
  return { r, warnings };
}

function until(r: DesktopRecordings, done: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    if (done()) return resolve();
    const sub = r.onDidChange(() => {
      if (!done()) return;
      sub.dispose();
      resolve();
    });
  });
}

/** A tick for the rejected promises and queued microtasks of what just happened to surface. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

describe('a full disk while the screen is recorded', () => {
  it('stops the recording with a warning (status and onWarning), although the warning file cannot be written; nothing is thrown at the process', async () => {
    let server: FakeRfbServer | undefined;
    let client: RfbClient | undefined;
    const { r, warnings } = recordings(async () => {
      server = fakeRfbServer({ width: 16, height: 12 });
      client = await RfbClient.connect(server.transport, { timeoutMs: 2000 });
      await client.requestUpdate(false);
      return client;
    });
    const screen = r.screenDir('sb');
    r.ensure('sb');
    await until(r, () => existsSync(screen) && readdirSync(screen).some((n) => n.startsWith('seg-')));
    disk.full = true;
    const painted = new Promise<void>((resolve) => {
      const sub = client!.onUpdate(() => (sub.dispose(), resolve()));
    });
    server!.paint(0, 0, 8, 8, [200, 10, 10]);
    await painted;
    await until(r, () => !r.status('sb').on);
    await settle();
    expect(unhandled).toEqual([]);
    expect(r.status('sb')).toMatchObject({ on: false, warning: expect.stringMatching(/disk full \(ENOSPC\).*the desktop keeps running/) });
    expect(warnings).toEqual([{ sandbox: 'sb', message: expect.stringMatching(/screen recording stopped: disk full/) }]);
    expect(existsSync(join(screen, '.recorder.lock'))).toBe(false);
    // The live connection goes on.
    expect(client!.state).toBe('connected');
    client!.close();
  });

  it('ensure (desktop status / start) on a full disk does not throw: recording off with a warning said once, no lock left; it starts once there is space', async () => {
    const { r, warnings } = recordings(async () => {
      const server = fakeRfbServer({ width: 16, height: 12 });
      const client = await RfbClient.connect(server.transport, { timeoutMs: 2000 });
      await client.requestUpdate(false);
      return client;
    });
    // A screen dir already there (the lock's write fails) and one not yet made (its mkdir fails).
    mkdirSync(r.screenDir('old'), { recursive: true });
    disk.full = true;
    for (const sandbox of ['old', 'new']) {
      r.ensure(sandbox);
      r.ensure(sandbox);
      expect(r.status(sandbox)).toMatchObject({
        on: false,
        warning: expect.stringMatching(/screen recording could not start: disk full \(ENOSPC\); the desktop keeps running/),
      });
    }
    expect(warnings.map((w) => w.sandbox)).toEqual(['old', 'new']);
    expect(existsSync(join(r.screenDir('old'), '.recorder.lock'))).toBe(false);
    await settle();
    expect(unhandled).toEqual([]);
    disk.full = false;
    r.ensure('old');
    expect(r.status('old').on).toBe(true);
  });
});
