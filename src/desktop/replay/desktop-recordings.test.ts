import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SandboxDeskError } from '../../shared/errors.js';
import { RfbClient } from '../rfb/rfb-client.js';
import { fakeRfbServer } from '../rfb/test/fake-rfb-server.js';
import { DesktopRecordings, type RecordingGap } from './desktop-recordings.js';

const dirs: string[] = [];
const open: DesktopRecordings[] = [];
afterEach(async () => {
  for (const r of open.splice(0)) await r.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function liveClient(): Promise<{ client: RfbClient; hangUp: () => void }> {
  const server = fakeRfbServer({ width: 16, height: 12 });
  const client = await RfbClient.connect(server.transport, { timeoutMs: 2000 });
  await client.requestUpdate(false);
  return { client, hangUp: () => server.close() };
}

function recordings(live: (sandbox: string) => Promise<RfbClient>, enabled = true) {
  const dir = mkdtempSync(join(tmpdir(), 'recscreen-recordings-'));
  dirs.push(dir);
  const r = new DesktopRecordings({ dir, enabled, live, retryMs: 20 });
  open.push(r);
  return { r, dir };
}

function changed(r: DesktopRecordings, until: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    if (until()) return resolve();
    const sub = r.onDidChange(() => {
      if (!until()) return;
      sub.dispose();
      resolve();
    });
  });
}

describe('DesktopRecordings', () => {
  it('records a running desktop, reconnects after the connection drops (a new segment), and stops with the desktop', async () => {
    const conns: { client: RfbClient; hangUp: () => void }[] = [];
    let running = true;
    const { r, dir } = recordings(async () => {
      if (!running) throw new SandboxDeskError('desktop_not_running', 'the desktop of sandbox sb is not running');
      const c = await liveClient();
      conns.push(c);
      return c.client;
    });
    const screen = r.screenDir('sb');
    expect(screen).toBe(join(dir, 'sb', 'screen'));
    r.ensure('sb');
    await changed(r, () => readdirSync(screen).some((n) => n.startsWith('seg-')));
    expect(r.status('sb')).toMatchObject({ on: true, warning: null });
    expect(existsSync(join(screen, '.recorder.lock'))).toBe(true);
    // Xvnc restarts: the connection drops, a new one is made, and recording goes on in a new segment.
    await new Promise((resolve) => setTimeout(resolve, 5)); // distinct segment start ms
    conns[0]!.hangUp();
    await changed(r, () => readdirSync(screen).filter((n) => n.startsWith('seg-')).length === 2);
    expect(conns).toHaveLength(2);
    expect(r.status('sb').on).toBe(true);
    // The desktop is gone: the next reconnection ends the recording and frees the lock.
    running = false;
    conns[1]!.hangUp();
    await changed(r, () => !r.status('sb').on);
    expect(existsSync(join(screen, '.recorder.lock'))).toBe(false);
    expect(r.status('sb').bytes).toBeGreaterThan(0);
  });

  it('remove: the segments go, the recording starts afresh in a new segment', async () => {
    const { r } = recordings(async () => (await liveClient()).client);
    const screen = r.screenDir('sb');
    r.ensure('sb');
    await changed(r, () => readdirSync(screen).some((n) => n.startsWith('seg-')));
    const before = readdirSync(screen).filter((n) => n.startsWith('seg-'));
    await new Promise((resolve) => setTimeout(resolve, 5)); // distinct segment start ms
    expect(await r.remove('sb')).toBeGreaterThan(0);
    await changed(r, () => readdirSync(screen).some((n) => n.startsWith('seg-') && !before.includes(n)));
    expect(readdirSync(screen).filter((n) => before.includes(n))).toEqual([]);
    expect(r.status('sb').on).toBe(true);
  });

  it('--no-record is remembered in the screen dir; config replay.record false records nothing', async () => {
    const { r } = recordings(async () => (await liveClient()).client);
    r.setWanted('sb', false);
    r.ensure('sb');
    expect(r.status('sb')).toEqual({ on: false, bytes: 0, since: null, warning: null });
    r.setWanted('sb', true);
    r.ensure('sb');
    expect(r.status('sb').on).toBe(true);
    const off = recordings(async () => (await liveClient()).client, false);
    off.r.ensure('sb');
    expect(off.r.status('sb').on).toBe(false);
  });

  it('a live process holding the lock records; this one reports its recording and does not write', async () => {
    let asked = 0;
    const { r } = recordings(async () => {
      asked++;
      return (await liveClient()).client;
    });
    const screen = r.screenDir('sb');
    rmSync(screen, { recursive: true, force: true });
    mkdirSync(screen, { recursive: true });
    // pid 1 is always alive: another process records.
    writeFileSync(join(screen, '.recorder.lock'), JSON.stringify({ pid: 1, since: '2026-01-01T00:00:00.000Z' }));
    r.ensure('sb');
    expect(asked).toBe(0);
    expect(r.status('sb')).toEqual({ on: true, bytes: 0, since: '2026-01-01T00:00:00.000Z', warning: null });
    // A lock left by a process that is gone is taken over.
    writeFileSync(join(screen, '.recorder.lock'), JSON.stringify({ pid: 2 ** 22 + 12345, since: '2026-01-01T00:00:00.000Z' }));
    r.ensure('sb');
    expect(asked).toBe(1);
  });

  it('a lock left by a recorder that died (kill -9): recording resumes and the gap is said, from its last write to now', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'recscreen-recordings-'));
    dirs.push(dir);
    const gaps: Array<{ sandbox: string; gap: RecordingGap }> = [];
    const r = new DesktopRecordings({
      dir,
      enabled: true,
      live: async () => (await liveClient()).client,
      retryMs: 20,
      onGap: (sandbox, gap) => gaps.push({ sandbox, gap }),
    });
    open.push(r);
    const screen = r.screenDir('sb');
    mkdirSync(screen, { recursive: true });
    const dead = 2 ** 22 + 12346;
    writeFileSync(join(screen, '.recorder.lock'), JSON.stringify({ pid: dead, since: '2026-01-01T00:00:00.000Z' }));
    // The dead recorder's segment: last written 30 s ago (after its lock was taken).
    const seg = join(screen, 'seg-001700000000000.rfbrec');
    writeFileSync(seg, 'x');
    // Whole seconds: every filesystem keeps them exactly.
    const lastWrite = new Date(Math.floor(Date.now() / 1000 - 30) * 1000);
    utimesSync(join(screen, '.recorder.lock'), new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    utimesSync(seg, lastWrite, lastWrite);
    const before = Date.now();
    r.ensure('sb');
    expect(r.status('sb').on).toBe(true);
    expect(gaps).toEqual([{ sandbox: 'sb', gap: { pid: dead, from: lastWrite.toISOString(), to: expect.any(String) } }]);
    expect(Date.parse(gaps[0]!.gap.to)).toBeGreaterThanOrEqual(before);
    // Taking over from itself (a lock of this process) or starting afresh is no gap.
    await r.stop('sb');
    r.ensure('sb');
    expect(gaps).toHaveLength(1);
  });
});
