/**
 * The screen recording for real (issue 16): a desktop in a docker sandbox is recorded from its start
 * (the core's live RFB connection); a page paints; the frame at the time of a live screenshot,
 * rendered from the recording by our own decoders, has the same pixels; the recording exports to an
 * MP4 ffprobe reads; stopping the desktop ends the recording; `--no-record` (record: false) keeps it off;
 * an export across the gap a stop and start leave (issue 36) is a whole video with a card in the gap.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CARD_BACKGROUND } from '../../src/desktop/replay/gap-card.js';
import { exportScreenVideo, renderScreenAt, screenGaps, screenRecordingInfo } from '../../src/desktop/replay/index.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

async function rawPixels(png: Buffer): Promise<Buffer> {
  return sharp(png).ensureAlpha().raw().toBuffer();
}

describe('the screen recording of a real desktop', () => {
  let t: TestDesk;
  let remote: Browser | undefined;
  const sb = uniqueName('recscreen');
  let dir: string;

  beforeAll(async () => {
    t = tempDesk();
    // A long-lived core (as the app and `mcp` are): it records the desktops it starts.
    t.desk.desktop.recordRunningDesktops();
    await t.desk.createSandbox({ name: sb, backend: 'docker', image: 'sandbox-desk/desktop:latest' });
    await t.desk.desktop.start(sb, { geometry: '1280x800' });
    dir = t.desk.desktop.screenRecordingDir(sb)!;
    expect(dir).toBe(join(t.dataDir, 'recordings', sb, 'screen'));
  }, 240_000);

  afterAll(async () => {
    await remote?.close().catch(() => undefined);
    await t?.dispose();
  });

  it('records from the start; the frame at a live screenshot’s time equals it pixel for pixel; exports to an MP4', async () => {
    await expect.poll(() => screenRecordingInfo(dir), { timeout: 90_000, interval: 500 }).not.toBeNull();
    const status = await t.desk.desktop.status(sb);
    expect(status.recording).toMatchObject({ on: true, warning: null });
    expect(status.recording.bytes).toBeGreaterThan(0);
    expect(status.recording.since).not.toBeNull();

    remote = await chromium.connectOverCDP((await t.desk.desktop.browserEndpoint(sb)).httpUrl);
    const page = await remote.contexts()[0]!.newPage();
    await page.setContent(`<body style="margin:0;background:#fff">
      <div style="position:absolute;left:40px;top:60px;width:300px;height:120px;background:#e0218a"></div>
      <div style="position:absolute;left:400px;top:200px;width:200px;height:200px;background:#1a7f37"></div>
      <h1 style="position:absolute;left:40px;top:300px;font:32px sans-serif">recorded ${sb}</h1></body>`);
    await page.bringToFront();
    const live = await t.desk.desktop.waitUntilStable(sb, { quietMs: 600, timeoutMs: 30_000 });
    expect(live.stable).toBe(true);
    const takenAt = new Date(live.frame.takenAt);
    // The recorder writes asynchronously and ticks an idle screen: wait until the recording reaches that time.
    await expect
      .poll(() => Date.parse(screenRecordingInfo(dir)?.endedAt ?? '0') >= takenAt.getTime(), { timeout: 30_000, interval: 250 })
      .toBe(true);
    const frame = await renderScreenAt(dir, takenAt);
    expect(frame).toMatchObject({ width: 1280, height: 800, scale: 1, format: 'png' });
    expect(Date.parse(frame.at)).toBeLessThanOrEqual(takenAt.getTime());
    const [a, b] = await Promise.all([rawPixels(live.image), rawPixels(Buffer.from(frame.data, 'base64'))]);
    expect(a.length).toBe(1280 * 800 * 4);
    expect(b.equals(a)).toBe(true);

    const info = screenRecordingInfo(dir)!;
    const file = join(t.dataDir, `${sb}.mp4`);
    const from = new Date(Math.max(Date.parse(info.startedAt), takenAt.getTime() - 4000));
    const video = await exportScreenVideo(dir, { from, to: takenAt, file, format: 'mp4' });
    expect(video).toMatchObject({ file, format: 'mp4', width: 1280, height: 800 });
    const probed = JSON.parse(
      execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'stream=width,height:format=duration', '-of', 'json', file], {
        encoding: 'utf8',
      }),
    ) as { streams: { width: number; height: number }[]; format: { duration: string } };
    expect(probed.streams[0]).toMatchObject({ width: 1280, height: 800 });
    expect(Math.abs(Number(probed.format.duration) * 1000 - video.durationMs)).toBeLessThan(300);
  }, 240_000);

  it('stopping the desktop ends the recording; a start with record: false (--no-record) keeps it off', async () => {
    await remote?.close().catch(() => undefined);
    remote = undefined;
    const stopped = await t.desk.desktop.stop(sb);
    expect(stopped.recording.on).toBe(false);
    expect(stopped.recording.bytes).toBeGreaterThan(0);
    const started = await t.desk.desktop.start(sb, { geometry: '1280x800', record: false });
    expect(started.running).toBe(true);
    expect(started.recording.on).toBe(false);
    expect((await t.desk.desktop.status(sb)).recording.on).toBe(false);
  }, 240_000);

  it('an export across the gap a stop and a start leave: a whole video, a card in the gap naming it, the gap in the events', async () => {
    // The first recording ended with the stop above; a new recorder marks its first segment as coming after a break, so the
    // gap counts however short (screen-gaps.test.ts proves the short case). 3 s keeps the gap longer than the card's
    // minimum hold (CARD_MIN_MS), so a frame from the middle of the gap in wall time is still the card in the video.
    const firstEnd = Date.parse(screenRecordingInfo(dir)!.endedAt);
    await t.desk.desktop.stop(sb);
    const wait = firstEnd + 3_000 - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait)); // the gap needs wall time, nothing to poll
    const again = await t.desk.desktop.start(sb, { geometry: '1280x800', record: true });
    expect(again.recording.on).toBe(true);
    await expect.poll(() => screenGaps(dir, 0, Infinity).length, { timeout: 60_000, interval: 250 }).toBe(1);
    const gap = screenGaps(dir, 0, Infinity)[0]!;
    await expect.poll(() => Date.parse(screenRecordingInfo(dir)!.endedAt) >= gap.to + 2000, { timeout: 30_000, interval: 250 }).toBe(true);
    const from = gap.from - 2000;
    const to = gap.to + 2000;
    const out = join(t.dataDir, `${sb}-gap-export`);
    const r = await t.desk.replay.export({ sandbox: sb, from: new Date(from).toISOString(), to: new Date(to).toISOString(), out });
    expect(r.video!.gaps).toEqual([
      { from: new Date(gap.from).toISOString(), to: new Date(gap.to).toISOString(), what: expect.stringMatching(/desktop not running/) },
    ]);
    const probed = JSON.parse(
      execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'format=duration', '-of', 'json', r.video!.file], { encoding: 'utf8' }),
    ) as { format: { duration: string } };
    expect(Math.abs(Number(probed.format.duration) * 1000 - (to - from))).toBeLessThan(500);
    // A frame from the middle of the gap is the card: its dark background at the corner, light text in the middle band.
    const frameAt = (s: number) =>
      execFileSync(
        'ffmpeg',
        ['-v', 'error', '-ss', s.toFixed(2), '-i', r.video!.file, '-frames:v', '1', '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-'],
        {
          maxBuffer: 16 << 20,
        },
      );
    const card = frameAt((gap.from + gap.to) / 2000 - from / 1000);
    expect(card.length).toBe(1280 * 800 * 3);
    const near = (px: Buffer, i: number) => CARD_BACKGROUND.every((c, k) => Math.abs(px[i + k]! - c) <= 10);
    expect(near(card, 0)).toBe(true);
    expect(near(card, (1280 * 799 + 1279) * 3)).toBe(true);
    let light = 0;
    for (let i = 1280 * 300 * 3; i < 1280 * 500 * 3; i += 3) if (card[i]! > 180 && card[i + 1]! > 180 && card[i + 2]! > 180) light++;
    expect(light).toBeGreaterThan(500);
    // Before the gap: the recorded desktop, not the card.
    const before = frameAt(0.5);
    let cardLike = 0;
    for (let i = 0; i < before.length; i += 3) if (near(before, i)) cardLike++;
    expect(cardLike).toBeLessThan(1280 * 800 * 0.5);
    const events = readFileSync(r.events, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { kind: string; summary: string });
    expect(events).toContainEqual(
      expect.objectContaining({ kind: 'recording', summary: expect.stringMatching(/^screen not recorded from .*desktop not running/) }),
    );
  }, 240_000);
});
