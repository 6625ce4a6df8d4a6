import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordPaintedScreen } from './test/painted-recording.js';
import { exportScreenVideo } from './screen-export.js';

const hasFfmpeg = (() => {
  try {
    execFileSync('ffmpeg', ['-version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

let root: string;
let dir: string;
const T0 = 1_700_000_000_000;

/** A 3-second synthetic recording of a 64x48 screen: a square moving every 200 ms. */
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'recscreen-export-'));
  dir = join(root, 'screen');
  await recordPaintedScreen(dir, T0);
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

function probe(file: string): { width: number; height: number; duration: number } {
  const out = execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'stream=width,height:format=duration', '-of', 'json', file], {
    encoding: 'utf8',
  });
  const j = JSON.parse(out) as { streams: { width: number; height: number }[]; format: { duration: string } };
  return { width: j.streams[0]!.width, height: j.streams[0]!.height, duration: Number(j.format.duration) };
}

describe('exportScreenVideo', () => {
  it.skipIf(!hasFfmpeg)('writes an MP4 and a WebM that ffprobe reads: duration and size of the range', async () => {
    for (const format of ['mp4', 'webm'] as const) {
      const file = join(root, `out.${format}`);
      const progress: number[] = [];
      const v = await exportScreenVideo(dir, {
        from: new Date(T0),
        to: new Date(T0 + 3000),
        file,
        format,
        onProgress: (done) => progress.push(done),
      });
      expect(v).toEqual({ file, format, durationMs: 3000, width: 64, height: 48 });
      const p = probe(file);
      expect([p.width, p.height]).toEqual([64, 48]);
      expect(p.duration).toBeGreaterThan(2.5);
      expect(p.duration).toBeLessThan(3.5);
      expect(progress.at(-1)).toBe(3000);
    }
  });

  it('a range outside the recording is refused with the span; a missing ffmpeg names the Debian package', async () => {
    const file = join(root, 'never.mp4');
    await expect(
      exportScreenVideo(dir, { from: new Date(T0 - 10_000), to: new Date(T0 - 5000), file, format: 'mp4' }),
    ).rejects.toMatchObject({ code: 'invalid_input', message: expect.stringContaining('spans 2023-11-14T22:13:20.000Z') });
    await expect(
      exportScreenVideo(dir, { from: new Date(T0), to: new Date(T0 + 1000), file, format: 'mp4', ffmpeg: '/nonexistent/ffmpeg' }),
    ).rejects.toMatchObject({ code: 'backend_unavailable', hint: expect.stringContaining('Debian package ffmpeg') });
    expect(existsSync(file)).toBe(false);
  });

  it.skipIf(!hasFfmpeg)('an aborted export stops ffmpeg and leaves no file', async () => {
    const file = join(root, 'aborted.mp4');
    const ac = new AbortController();
    ac.abort();
    await expect(
      exportScreenVideo(dir, { from: new Date(T0), to: new Date(T0 + 3000), file, format: 'mp4', signal: ac.signal }),
    ).rejects.toMatchObject({ code: 'cancelled' });
    expect(existsSync(file)).toBe(false);
  });
});
