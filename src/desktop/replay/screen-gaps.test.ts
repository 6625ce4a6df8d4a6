import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RfbClient } from '../rfb/rfb-client.js';
import { fakeRfbServer, type FakeRfbServer } from '../rfb/test/fake-rfb-server.js';
import { CARD_BACKGROUND } from './gap-card.js';
import { MAGIC, RecordType, encodeRecord, keyframeHeader, segmentName } from './rfbrec-format.js';
import { CARD_MIN_MS, exportScreenVideo } from './screen-export.js';
import { ScreenRecorder } from './screen-recorder.js';
import { renderScreenAt, screenGaps, screenRecordTimes } from './screen-replay.js';
import { recordPaintedScreen } from './test/painted-recording.js';

/**
 * Which boundaries between segments are gaps (issue 36): one where the screen was not recorded — the
 * desktop restarted, the sandbox was restored, the connection dropped — is a gap the viewer is told
 * about however short; a segment that only rotated is not, and neither is a pause in one recording.
 */

let root: string;
const T0 = 1_700_000_000_000;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'recscreen-gaps-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
const freshDir = () => join(root, `screen-${++n}`);

async function connected(server: FakeRfbServer): Promise<RfbClient> {
  const client = await RfbClient.connect(server.transport, { timeoutMs: 2000 });
  await client.requestUpdate(false);
  return client;
}

async function paint(server: FakeRfbServer, client: RfbClient, x: number): Promise<void> {
  const done = new Promise<void>((resolve) => {
    const sub = client.onUpdate(() => (sub.dispose(), resolve()));
  });
  server.paint(x, 0, 8, 8, [255, 0, 0]);
  await done;
}

/** The frames of a raw "video" (a stand-in ffmpeg keeps what it is fed): card or screen, by the corner pixel. */
function frameKinds(file: string, width: number, height: number): ('card' | 'screen')[] {
  const raw = readFileSync(file);
  const size = width * height * 4;
  return Array.from({ length: raw.length / size }, (_, i) => {
    const p = raw.subarray(i * size, i * size + 3);
    return p[0] === CARD_BACKGROUND[0] && p[1] === CARD_BACKGROUND[1] && p[2] === CARD_BACKGROUND[2] ? 'card' : 'screen';
  });
}

function fakeFfmpeg(): string {
  const fake = join(root, 'fake-ffmpeg');
  writeFileSync(fake, '#!/bin/sh\n[ "$1" = -version ] && exit 0\nfor a; do out=$a; done\ncat > "$out"\n', { mode: 0o755 });
  return fake;
}

/** A segment as recordings made before the break mark were written: a keyframe at each time, nothing before it. */
function unmarkedSegment(dir: string, times: number[]): void {
  mkdirSync(dir, { recursive: true });
  const pixels = deflateSync(Buffer.alloc(4 * 4 * 4, 200));
  const records = times.map((t) => encodeRecord(RecordType.Keyframe, t, Buffer.concat([keyframeHeader(4, 4), pixels])));
  writeFileSync(join(dir, segmentName(times[0]!)), Buffer.concat([MAGIC, ...records]));
}

describe('gaps between screen segments', () => {
  it('a desktop restarted 2 s later (a restore: a new recorder) is a gap, its card held on screen for CARD_MIN_MS', async () => {
    const dir = freshDir();
    await recordPaintedScreen(dir, T0); // records T0 … T0+3 s
    await recordPaintedScreen(dir, T0 + 5000); // the desktop back 2 s later
    const gaps = screenGaps(dir, T0, T0 + 8000);
    expect(gaps).toHaveLength(1);
    expect(gaps[0]!.from).toBeGreaterThanOrEqual(T0 + 2800);
    expect(gaps[0]!.from).toBeLessThanOrEqual(T0 + 3000);
    expect(gaps[0]!.to).toBe(T0 + 5000);
    // A frame asked for inside it is refused, not the last picture before the restart passed off as then.
    await expect(renderScreenAt(dir, new Date(T0 + 4000))).rejects.toMatchObject({ code: 'not_found' });

    const file = join(root, 'restart.raw');
    const v = await exportScreenVideo(dir, {
      from: new Date(T0),
      to: new Date(T0 + 8000),
      file,
      format: 'mp4',
      fps: 10,
      ffmpeg: fakeFfmpeg(),
      describeGap: () => 'sandbox restored from a checkpoint (the desktop restarted)',
    });
    expect(v.gaps).toEqual([
      {
        from: new Date(gaps[0]!.from).toISOString(),
        to: new Date(T0 + 5000).toISOString(),
        what: expect.stringMatching(/^sandbox restored/),
      },
    ]);
    const kinds = frameKinds(file, 64, 48);
    const firstCard = kinds.indexOf('card');
    const cards = kinds.filter((k) => k === 'card').length;
    // One unbroken run of cards, CARD_MIN_MS long (the gap itself is shorter: 19 frames fall inside it).
    expect(cards).toBe((CARD_MIN_MS * 10) / 1000);
    expect(kinds.slice(firstCard, firstCard + cards).every((k) => k === 'card')).toBe(true);
    expect(firstCard).toBe(Math.floor((gaps[0]!.from - T0) / 100) + 1);
    expect(kinds.at(-1)).toBe('screen');
    expect(v.durationMs).toBe(kinds.length * 100);
  }, 30_000);

  it('a card is held even for a gap shorter than one frame interval (no frame falls inside it)', async () => {
    const dir = freshDir();
    await recordPaintedScreen(dir, T0);
    await recordPaintedScreen(dir, T0 + 3050); // back 50 ms after the last record, between two 100 ms frames
    const [gap] = screenGaps(dir, T0, T0 + 6050);
    expect(gap).toBeDefined();
    const file = join(root, 'blink.raw');
    const v = await exportScreenVideo(dir, {
      from: new Date(T0),
      to: new Date(T0 + 6000),
      file,
      format: 'mp4',
      fps: 10,
      ffmpeg: fakeFfmpeg(),
    });
    expect(v.gaps).toHaveLength(1);
    expect(frameKinds(file, 64, 48).filter((k) => k === 'card')).toHaveLength((CARD_MIN_MS * 10) / 1000);
  }, 30_000);

  it('a reconnection is a gap from the last record before the drop: nothing is ticked while disconnected', async () => {
    const dir = freshDir();
    let t = T0;
    // Ticks every 20 ms of this test's real time, so a recorder that ticked while disconnected would.
    const rec = new ScreenRecorder(dir, { now: () => t, tickMs: 20 });
    const first = fakeRfbServer({ width: 32, height: 24 });
    const a = await connected(first);
    rec.attach(a);
    t += 200;
    await paint(first, a, 0);
    const lastBefore = t;
    first.close();
    await new Promise((r) => a.onClose(() => r(undefined)));
    t += 2000; // the desktop comes back 2 s later
    await new Promise((r) => setTimeout(r, 150)); // several ticker periods pass while disconnected
    const second = fakeRfbServer({ width: 32, height: 24 });
    const b = await connected(second);
    rec.attach(b);
    t += 200;
    await paint(second, b, 8);
    await rec.stop();
    b.close();
    expect(screenGaps(dir, T0, t)).toEqual([{ from: lastBefore, to: T0 + 2200 }]);
  });

  it('a 2 s pause in one recording, and the rotated segment after it, are no gap', async () => {
    const dir = freshDir();
    let t = T0;
    const rec = new ScreenRecorder(dir, { now: () => t, segmentMs: 1000 });
    const server = fakeRfbServer({ width: 32, height: 24 });
    const client = await connected(server);
    rec.attach(client);
    t += 200;
    await paint(server, client, 0);
    t += 2000; // nothing changes on the screen for 2 s, then it does: the segment is due, a new one starts
    await paint(server, client, 8);
    await rec.stop();
    client.close();
    expect(screenRecordTimes(dir).length).toBeGreaterThanOrEqual(2);
    expect(screenGaps(dir, T0, t + 1)).toEqual([]);
    await expect(renderScreenAt(dir, new Date(T0 + 1500))).resolves.toMatchObject({ width: 32 });
  });

  it('recordings from before the mark: an unmarked boundary is a gap only past 10 s', () => {
    const short = freshDir();
    unmarkedSegment(short, [T0, T0 + 1000]);
    unmarkedSegment(short, [T0 + 3000, T0 + 4000]); // 2 s: a rotation, as far as such a recording says
    expect(screenGaps(short, T0, T0 + 4000)).toEqual([]);
    const long = freshDir();
    unmarkedSegment(long, [T0, T0 + 1000]);
    unmarkedSegment(long, [T0 + 21_000, T0 + 22_000]);
    expect(screenGaps(long, T0, T0 + 22_000)).toEqual([{ from: T0 + 1000, to: T0 + 21_000 }]);
  });
});
