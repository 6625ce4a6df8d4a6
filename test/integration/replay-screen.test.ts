/**
 * The screen recording for real (issue 16): a desktop in a docker sandbox is recorded from its start
 * (the core's live RFB connection); a page paints; the frame at the time of a live screenshot,
 * rendered from the recording by our own decoders, has the same pixels; the recording exports to an
 * MP4 ffprobe reads; stopping the desktop ends the recording; `--no-record` (record: false) keeps it off.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportScreenVideo, renderScreenAt, screenRecordingInfo } from '../../src/desktop/replay/index.js';
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
});
