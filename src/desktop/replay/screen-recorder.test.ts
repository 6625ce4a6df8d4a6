import { appendFileSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SandboxDeskError } from '../../shared/errors.js';
import { LIVE_ENCODINGS, RfbClient } from '../rfb/rfb-client.js';
import { fakeRfbServer, type FakeRfbServer } from '../rfb/test/fake-rfb-server.js';
import { ScreenCursor, renderScreenAt, screenRecordingInfo, trimScreenRecording } from './screen-replay.js';
import { ScreenRecorder, type SegmentWriter } from './screen-recorder.js';
import { RecordType, scanRecords } from './rfbrec-format.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'recscreen-unit-'));
  dirs.push(d);
  return join(d, 'screen');
}

/** A clock the test moves, so records carry known times. */
function clock(start = 1_700_000_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

async function connected(server: FakeRfbServer, encodings?: number[]): Promise<RfbClient> {
  const client = await RfbClient.connect(server.transport, { timeoutMs: 2000, ...(encodings ? { encodings } : {}) });
  await client.requestUpdate(false);
  return client;
}

function nextUpdate(client: RfbClient): Promise<void> {
  return new Promise((resolve) => {
    const sub = client.onUpdate(() => {
      sub.dispose();
      resolve();
    });
  });
}

/** Drives a synthetic session: paints, copies, resizes; returns the live framebuffer after each step with its time. */
async function session(client: RfbClient, server: FakeRfbServer, c: ReturnType<typeof clock>) {
  const shots: { t: number; rgba: Uint8Array; width: number; height: number }[] = [];
  const steps: (() => void)[] = [
    () => server.paint(2, 3, 10, 8, [255, 0, 0]),
    () => server.paint(20, 10, 30, 20, [0, 200, 50]),
    () => server.copyRect(20, 10, 0, 0, 16, 12),
    () => server.paint(0, 30, 64, 10, [10, 20, 250]),
    () => server.desktopSize(80, 60),
    () => server.fullUpdate(),
    () => server.paint(0, 0, 80, 60, [200, 100, 50]), // one Raw rect over the whole screen: a full repaint
    () => server.paint(70, 50, 10, 10, [123, 45, 67]),
    () => server.copyRect(70, 50, 5, 5, 10, 10),
  ];
  for (const step of steps) {
    c.advance(250);
    const done = nextUpdate(client);
    step();
    await done;
    shots.push({ t: c.now(), rgba: client.framebuffer(), width: client.width, height: client.height });
  }
  return shots;
}

describe('ScreenRecorder + replay', () => {
  it.each([
    ['Raw', undefined],
    ['Hextile, as the live connection asks', LIVE_ENCODINGS],
  ])(
    'round-trips %s: the framebuffer at t from the recording is the live one at t, pixel for pixel (keyframes between, a resize, CopyRect)',
    async (_, encodings) => {
      const dir = tempDir();
      const c = clock();
      const server = fakeRfbServer({ width: 64, height: 48, chunkSize: 'random', fill: [9, 9, 9] });
      const client = await connected(server, encodings);
      const start = { t: c.now(), rgba: client.framebuffer() };
      const rec = new ScreenRecorder(dir, { now: c.now, keyframeEveryScreens: 1 });
      rec.attach(client);
      const shots = await session(client, server, c);
      await rec.flushed();
      expect(rec.status).toMatchObject({ on: true, warning: null });
      expect(rec.status.bytes).toBeGreaterThan(0);

      const info = screenRecordingInfo(dir)!;
      expect(info.startedAt).toBe(new Date(start.t).toISOString());
      expect(info.endedAt).toBe(new Date(shots.at(-1)!.t).toISOString());
      expect(info.keyframes).toBeGreaterThan(1);
      expect([info.width, info.height]).toEqual([80, 60]);

      // The full repaint was recorded as one, a starting point for seeks like a keyframe.
      const types = readdirSync(dir).flatMap((n) => {
        const bytes = readFileSync(join(dir, n));
        return scanRecords(bytes.length, (o, l) => bytes.subarray(o, o + l)).records.map((r) => r.type);
      });
      expect(types).toContain(RecordType.FullUpdate);

      const cursor = new ScreenCursor(dir);
      await cursor.moveTo(start.t);
      expect(Buffer.from(cursor.fb.data).equals(Buffer.from(start.rgba))).toBe(true);
      // Forward (playback) and then backwards (seeks), each against the live framebuffer.
      for (const s of [...shots, ...[...shots].reverse()]) {
        // Between updates: still the last one before (the last one ends the recording's span).
        await cursor.moveTo(s === shots.at(-1) ? s.t : s.t + 100);
        expect([cursor.fb.width, cursor.fb.height]).toEqual([s.width, s.height]);
        expect(Buffer.from(cursor.fb.data).equals(Buffer.from(s.rgba))).toBe(true);
        expect(cursor.shownAt).toBe(s.t);
      }
      const frame = await renderScreenAt(dir, new Date(shots[2]!.t + 10), { maxWidth: 32 });
      expect(frame).toMatchObject({ at: new Date(shots[2]!.t).toISOString(), width: 32, height: 24, scale: 0.5, format: 'png' });
      expect(Buffer.from(frame.data, 'base64').subarray(1, 4).toString()).toBe('PNG');
      await rec.stop();
      client.close();
    },
  );

  it('a time outside the recording is refused with the span; trimming removes the oldest segments, never the newest', async () => {
    const dir = tempDir();
    const c = clock();
    const server = fakeRfbServer({ width: 64, height: 48 });
    const client = await connected(server);
    const rec = new ScreenRecorder(dir, { now: c.now, segmentMs: 500 });
    rec.attach(client);
    await session(client, server, c);
    await rec.stop();
    const segs = readdirSync(dir).sort();
    expect(segs.length).toBeGreaterThanOrEqual(3);
    const info = screenRecordingInfo(dir)!;
    const before = new Date(Date.parse(info.startedAt) - 1000);
    const err = await renderScreenAt(dir, before).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxDeskError);
    expect((err as SandboxDeskError).code).toBe('invalid_input');
    expect((err as Error).message).toContain(`spans ${info.startedAt} – ${info.endedAt}`);
    await expect(renderScreenAt(tempDir(), new Date())).rejects.toMatchObject({ code: 'not_found' });

    const sizes = segs.map((s) => statSync(join(dir, s)).size);
    const total = sizes.reduce((a, b) => a + b, 0);
    const removed = trimScreenRecording(dir, total - sizes[0]!);
    expect(removed).toBe(sizes[0]);
    expect(readdirSync(dir).sort()).toEqual(segs.slice(1));
    expect(Date.parse(screenRecordingInfo(dir)!.startedAt)).toBeGreaterThan(Date.parse(info.startedAt));
    // Even a limit of 0 keeps the newest segment (the recorder may be writing it).
    trimScreenRecording(dir, 0);
    expect(readdirSync(dir)).toEqual([segs.at(-1)]);
    expect(screenRecordingInfo(dir)!.endedAt).toBe(info.endedAt);
    client.close();
  });

  it('spaces keyframes by the pixels painted since the last one, not by bytes: small Hextile updates still bring one after N screens', async () => {
    const dir = tempDir();
    const c = clock();
    const server = fakeRfbServer({ width: 64, height: 48 });
    const client = await connected(server, LIVE_ENCODINGS);
    const rec = new ScreenRecorder(dir, { now: c.now, keyframeEveryScreens: 2 });
    rec.attach(client);
    const keyframeTimes = () =>
      readdirSync(dir).flatMap((n) => {
        const bytes = readFileSync(join(dir, n));
        return scanRecords(bytes.length, (o, l) => bytes.subarray(o, o + l))
          .records.filter((r) => r.type === RecordType.Keyframe)
          .map((r) => r.timeMs);
      });
    // Half-screen solid paints: a few bytes each in Hextile, half a screen of painting to replay.
    const paints: number[] = [];
    for (let i = 0; i < 8; i++) {
      c.advance(100);
      const done = nextUpdate(client);
      server.paint(i % 2 ? 32 : 0, 0, 32, 48, [i * 20, 0, 0]);
      await done;
      paints.push(c.now());
    }
    await rec.flushed();
    // The first keyframe at the start; then one when the 4th and the 8th paint made it 2 screens.
    expect(keyframeTimes()).toEqual([expect.any(Number), paints[3], paints[7]]);
    await rec.stop();
    client.close();
  });

  it('a recording cut by a crash replays up to its last whole record (a torn tail, then garbage)', async () => {
    const dir = tempDir();
    const c = clock();
    const server = fakeRfbServer({ width: 64, height: 48 });
    const client = await connected(server);
    const rec = new ScreenRecorder(dir, { now: c.now });
    rec.attach(client);
    const shots = await session(client, server, c);
    await rec.stop();
    const [file] = readdirSync(dir);
    const path = join(dir, file!);
    truncateSync(path, statSync(path).size - 7); // the last update torn mid-record
    appendFileSync(path, Buffer.from([0, 0, 0, 40, 2, 1, 2, 3])); // and a half-written header after it
    const info = screenRecordingInfo(dir)!;
    expect(info.endedAt).toBe(new Date(shots.at(-2)!.t).toISOString());
    const cursor = new ScreenCursor(dir);
    await cursor.moveTo(shots.at(-2)!.t);
    expect(Buffer.from(cursor.fb.data).equals(Buffer.from(shots.at(-2)!.rgba))).toBe(true);
    await expect(cursor.moveTo(shots.at(-1)!.t)).rejects.toMatchObject({ code: 'invalid_input' });
    client.close();
  });

  it('disk full: the recording stops with a warning, the live connection goes on', async () => {
    const dir = tempDir();
    const c = clock();
    const server = fakeRfbServer({ width: 64, height: 48 });
    const client = await connected(server);
    let writes = 0;
    const full: SegmentWriter = {
      open: async () => ({
        write: async () => {
          if (++writes > 2) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        },
        close: async () => undefined,
      }),
    };
    const rec = new ScreenRecorder(dir, { now: c.now, writer: full });
    let changes = 0;
    rec.onDidChange(() => changes++);
    rec.attach(client);
    await session(client, server, c);
    await rec.flushed();
    expect(rec.status).toMatchObject({ on: false, since: null });
    expect(rec.status.warning).toMatch(/disk full \(ENOSPC\).*the desktop keeps running/);
    expect(changes).toBeGreaterThan(0);
    // The connection is untouched: updates still arrive and apply.
    const done = nextUpdate(client);
    server.paint(0, 0, 4, 4, [1, 2, 3]);
    await done;
    expect(client.state).toBe('connected');
    expect(Array.from(client.framebuffer().subarray(0, 4))).toEqual([1, 2, 3, 255]);
    client.close();
  });

  it('a reconnection (a new connection attached) starts a new segment with its own keyframe', async () => {
    const dir = tempDir();
    const c = clock();
    const first = fakeRfbServer({ width: 32, height: 24, fill: [50, 0, 0] });
    const a = await connected(first);
    const rec = new ScreenRecorder(dir, { now: c.now });
    rec.attach(a);
    c.advance(100);
    const upd = nextUpdate(a);
    first.paint(0, 0, 8, 8, [0, 0, 255]);
    await upd;
    first.close();
    await new Promise((r) => a.onClose(() => r(undefined)));
    c.advance(5000);
    const second = fakeRfbServer({ width: 40, height: 30, fill: [0, 90, 0] });
    const b = await connected(second);
    rec.attach(b);
    const atB = { t: c.now(), rgba: b.framebuffer() };
    await rec.stop();
    expect(readdirSync(dir)).toHaveLength(2);
    const cursor = new ScreenCursor(dir);
    await cursor.moveTo(atB.t);
    expect([cursor.fb.width, cursor.fb.height]).toEqual([40, 30]);
    expect(Buffer.from(cursor.fb.data).equals(Buffer.from(atB.rgba))).toBe(true);
    b.close();
  });
});
