import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordPaintedScreen } from './test/painted-recording.js';
import { CARD_BACKGROUND, gapAt } from './gap-card.js';
import { exportScreenVideo } from './screen-export.js';
import { renderScreenAt } from './screen-replay.js';

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
  it.skipIf(!hasFfmpeg)(
    'writes an MP4 and a WebM that ffprobe reads: duration and size of the range',
    async () => {
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
        expect(v).toEqual({ file, format, durationMs: 3000, width: 64, height: 48, gaps: [] });
        const p = probe(file);
        expect([p.width, p.height]).toEqual([64, 48]);
        expect(p.duration).toBeGreaterThan(2.5);
        expect(p.duration).toBeLessThan(3.5);
        expect(progress.at(-1)).toBe(3000);
      }
      // Two real encodes: seconds on a loaded 2-core machine, past the default 5 s.
    },
    30_000,
  );

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

describe('exportScreenVideo over a gap (the desktop stopped between two segments)', () => {
  it('draws the card on exactly the frames inside the gap, the recorded screen on the others, and lists the gap', async () => {
    // Two recordings 20 s apart in one dir: segments at T0 (0–3 s) and T0+20 s (20–23 s).
    const gapped = join(root, 'gapped');
    await recordPaintedScreen(gapped, T0);
    await recordPaintedScreen(gapped, T0 + 20_000);
    // A stand-in ffmpeg that keeps the raw frames it is fed: which frame is what, byte for byte.
    const fake = join(root, 'fake-ffmpeg');
    writeFileSync(fake, '#!/bin/sh\n[ "$1" = -version ] && exit 0\nfor a; do out=$a; done\ncat > "$out"\n', { mode: 0o755 });
    const file = join(root, 'gapped.raw');
    const from = T0 + 1000;
    const v = await exportScreenVideo(gapped, {
      from: new Date(from),
      to: new Date(T0 + 22_000),
      file,
      format: 'mp4',
      fps: 10,
      ffmpeg: fake,
      describeGap: () => 'desktop not running',
    });
    expect(v.gaps).toHaveLength(1);
    const gap = { from: Date.parse(v.gaps[0]!.from), to: Date.parse(v.gaps[0]!.to) };
    expect(v.gaps[0]!.what).toBe('desktop not running');
    expect(gap.from).toBeGreaterThanOrEqual(T0 + 2800);
    expect(gap.from).toBeLessThanOrEqual(T0 + 3000);
    expect(gap.to).toBe(T0 + 20_000);
    expect(v.durationMs).toBe(21_000);
    const raw = readFileSync(file);
    const size = 64 * 48 * 4;
    expect(raw.length).toBe(210 * size);
    const kinds = Array.from({ length: 210 }, (_, i) => {
      const p = raw.subarray(i * size, i * size + 4);
      return p[0] === CARD_BACKGROUND[0] && p[1] === CARD_BACKGROUND[1] && p[2] === CARD_BACKGROUND[2] ? 'card' : 'screen';
    });
    const expected = Array.from({ length: 210 }, (_, i) => (gapAt([gap], from + i * 100) ? 'card' : 'screen'));
    expect(kinds).toEqual(expected);
    expect(kinds.filter((k) => k === 'card').length).toBeGreaterThan(160);
    // The frames after the gap are the second recording's screen, not the card or a stale first segment.
    expect(kinds.at(-1)).toBe('screen');
    // A single frame asked for inside the gap is refused, saying which times have a picture.
    await expect(renderScreenAt(gapped, new Date(T0 + 15_000))).rejects.toMatchObject({
      code: 'not_found',
      hint: expect.stringMatching(/^ask for a time before .* or from 2023-11-14T22:13:40\.000Z on; an export draws the gap as a card$/),
    });
  }, 30_000);
});
