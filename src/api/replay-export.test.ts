import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordPaintedScreen } from '../desktop/replay/test/painted-recording.js';
import { castProblems, parseCast } from '../session/cast-file.js';
import { ReplayJournal } from './replay-journal.js';
import { screenRecordings } from './replay-screen-binding.js';
import { ReplayService } from './replay-service.js';

/**
 * ReplayService over the real screen recording (recscreen's recorder, reader and ffmpeg export): a
 * synthetic 3-second recording and a terminal cast beside it, exported; and the export with no
 * ffmpeg on PATH.
 */
const hasFfmpeg = (() => {
  try {
    execFileSync('ffmpeg', ['-version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

const T0 = 1_700_000_000_000;
let root: string;
const ended: Array<{ code?: string; message: string } | null> = [];

function service(): ReplayService {
  return new ReplayService({
    root,
    limitBytes: 1 << 30,
    screen: screenRecordings,
    journal: new ReplayJournal(root),
    calls: () => [],
    checkpoints: () => [],
    recordingTerminals: () => [],
    startOperation: () => ({ id: 'op', progress: () => undefined, end: (e) => void ended.push(e ?? null) }),
    changed: () => undefined,
  });
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'sdesk-replay-export-'));
  await recordPaintedScreen(join(root, 'box', 'screen'), T0);
  mkdirSync(join(root, 'box', 'terminals'), { recursive: true });
  writeFileSync(
    join(root, 'box', 'terminals', 'ab12.cast'),
    [
      JSON.stringify({ version: 2, width: 80, height: 24, timestamp: T0 / 1000 }),
      JSON.stringify([0.5, 'o', 'early']),
      JSON.stringify([1.5, 'o', 'middle']),
      JSON.stringify([2.8, 'o', 'late']),
    ].join('\n') + '\n',
  );
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('ReplayService with the real screen recording', () => {
  it('lists the screen, renders a frame at t, and refuses a time outside with the span', async () => {
    const svc = service();
    const r = svc.list('box')[0]!;
    expect(r.screen).toMatchObject({ width: 64, height: 48 });
    const f = await svc.frame({ sandbox: 'box', at: new Date(T0 + 1000).toISOString() });
    expect(f).toMatchObject({ sandbox: 'box', width: 64, height: 48, format: 'png' });
    expect(Buffer.from(f.data, 'base64').subarray(1, 4).toString()).toBe('PNG');
    await expect(svc.frame({ sandbox: 'box', at: new Date(T0 + 3_600_000).toISOString() })).rejects.toThrow(/\d{4}-\d\d-\d\dT.* – /);
  });

  it.skipIf(!hasFfmpeg)('exports a range: an MP4 ffprobe reads, the cast clipped, events.jsonl', async () => {
    const out = join(root, 'out');
    const r = await service().export({
      sandbox: 'box',
      from: new Date(T0 + 1000).toISOString(),
      to: new Date(T0 + 2000).toISOString(),
      out,
    });
    const probe = JSON.parse(
      execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'stream=width,height:format=duration', '-of', 'json', r.video!.file], {
        encoding: 'utf8',
      }),
    ) as { streams: Array<{ width: number; height: number }>; format: { duration: string } };
    expect(probe.streams[0]).toMatchObject({ width: 64, height: 48 });
    expect(Number(probe.format.duration)).toBeGreaterThan(0.5);
    const cast = readFileSync(r.casts[0]!, 'utf8');
    expect(castProblems(cast)).toEqual([]);
    expect(parseCast(cast)!.events).toEqual([[0.5, 'o', 'middle']]);
  });

  it('ffmpeg missing (not on PATH): the export fails naming the Debian package, the operation fails, the lock is freed', async () => {
    const path = process.env.PATH;
    process.env.PATH = join(root, 'no-bin');
    try {
      await expect(service().export({ sandbox: 'box', out: join(root, 'out-noffmpeg') })).rejects.toMatchObject({
        message: expect.stringContaining('ffmpeg is not installed'),
        hint: expect.stringContaining('Debian package ffmpeg'),
      });
    } finally {
      process.env.PATH = path;
    }
    expect(ended.at(-1)).toMatchObject({ message: expect.stringContaining('ffmpeg is not installed') });
    // The next export is not refused as busy.
    if (hasFfmpeg)
      await expect(
        service().export({
          sandbox: 'box',
          out: join(root, 'out-again'),
          from: new Date(T0 + 100).toISOString(),
          to: new Date(T0 + 200).toISOString(),
        }),
      ).resolves.toBeDefined();
  });
});
