/**
 * Issue 35.5 on a real full disk: the recordings folder on a 1 MiB tmpfs (mounted by this suite, which
 * runs as root as dockerd does), filled but for a few KiB, and a desktop whose screen keeps changing
 * (the fake RFB server the unit tests use). The segments hit ENOSPC, then so does the recorder's
 * warning file: that used to be an unhandled rejection, the end of `serve`. Now the recording stops
 * with its warning and this process goes on.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DesktopRecordings } from '../../src/desktop/replay/desktop-recordings.js';
import { RfbClient } from '../../src/desktop/rfb/rfb-client.js';
import { fakeRfbServer } from '../../src/desktop/rfb/test/fake-rfb-server.js';

describe('screen recording onto a real full disk', () => {
  const disk = mkdtempSync(join(tmpdir(), 'sdesk-recfull-'));
  const unhandled: unknown[] = [];
  const onUnhandled = (err: unknown) => unhandled.push(err);

  beforeAll(() => {
    const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'sdesk-recfull', disk], { encoding: 'utf8' });
    expect(m.status, `mounting a tmpfs needs root: ${m.stderr}`).toBe(0);
    // All but 8 KiB taken.
    writeFileSync(join(disk, 'filler'), Buffer.alloc(1024 * 1024 - 8 * 1024));
    process.on('unhandledRejection', onUnhandled);
    process.on('uncaughtException', onUnhandled);
  });
  afterAll(() => {
    process.off('unhandledRejection', onUnhandled);
    process.off('uncaughtException', onUnhandled);
    spawnSync('umount', [disk]);
    rmSync(disk, { recursive: true, force: true });
  });

  it('the recording stops with a disk-full warning, the connection goes on, nothing is thrown at the process', async () => {
    const server = fakeRfbServer({ width: 64, height: 48 });
    const client = await RfbClient.connect(server.transport, { timeoutMs: 2000 });
    await client.requestUpdate(false);
    const warnings: string[] = [];
    const recordings = new DesktopRecordings({
      dir: disk,
      enabled: true,
      live: async () => client,
      onWarning: (_sandbox, message) => warnings.push(message),
    });
    try {
      recordings.ensure('sb');
      // Paint until the recording stops: each update is a record of a few dozen bytes.
      for (let i = 0; i < 5000 && recordings.status('sb').on; i++) {
        const done = new Promise<void>((resolve) => {
          const sub = client.onUpdate(() => (sub.dispose(), resolve()));
        });
        server.paint(i % 60, (i * 7) % 44, 4, 4, [i % 256, (i * 13) % 256, (i * 29) % 256]);
        await done;
        if (i % 50 === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(unhandled).toEqual([]);
      expect(recordings.status('sb')).toMatchObject({ on: false, warning: expect.stringMatching(/disk full \(ENOSPC\)/) });
      expect(warnings).toEqual([expect.stringMatching(/screen recording stopped: disk full \(ENOSPC\); the desktop keeps running/)]);
      expect(readdirSync(join(disk, 'sb', 'screen')).some((n) => n.startsWith('seg-'))).toBe(true);
      expect(existsSync(join(disk, 'sb', 'screen', '.recorder.lock'))).toBe(false);
      expect(client.state).toBe('connected');
    } finally {
      await recordings.close();
      client.close();
    }
  });
});
