import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { SandboxDeskError } from '../../shared/errors.js';
import type { ReplayExportResult } from '../../shared/replay-types.js';
import { scaleRgba } from '../screen/frame-geometry.js';
import { gapAt, renderGapCard, type GapCard } from './gap-card.js';
import { ScreenCursor, screenGaps, type ScreenGap } from './screen-replay.js';

/**
 * A screen recording as a video: the recording replayed at a fixed frame rate into ffmpeg's stdin
 * (raw RGBA), encoded as H.264 in MP4 or VP9 in WebM. ffmpeg is Debian's package (setup installs
 * it); none on PATH is refused naming the package. Where the screen was not recorded (the desktop
 * stopped, restarted or was restored between two segments) the video shows a card saying so
 * (gap-card.ts) instead of failing, for at least CARD_MIN_MS however short the gap was.
 */

export interface ExportScreenOptions {
  from: Date;
  to: Date;
  file: string;
  format: 'mp4' | 'webm';
  /** Frames per second of the video (default 10: the live connection samples the screen every 100 ms). */
  fps?: number;
  signal?: AbortSignal;
  onProgress?: (doneMs: number, totalMs: number) => void;
  /** The ffmpeg binary (default `ffmpeg` on PATH). */
  ffmpeg?: string;
  /** What a gap was, for its card (default "not recorded"): the caller knows the sandbox's operations. */
  describeGap?: (gap: ScreenGap) => string;
}

/**
 * The least time a gap's card is on screen. A restore's or a restart's gap can be a second or two,
 * shorter than anyone reads a card in (or, between two frames, none at all): the card is held this
 * long and the video runs longer than the range by the difference. Longer gaps show for their length.
 */
export const CARD_MIN_MS = 2000;

const CODEC: Record<'mp4' | 'webm', string[]> = {
  mp4: ['-c:v', 'libx264', '-preset', 'ultrafast', '-crf', '23', '-pix_fmt', 'yuv420p', '-movflags', '+faststart'],
  webm: ['-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-row-mt', '1', '-b:v', '0', '-crf', '36', '-pix_fmt', 'yuv420p'],
};

export async function exportScreenVideo(dir: string, opts: ExportScreenOptions): Promise<NonNullable<ReplayExportResult['video']>> {
  const fps = opts.fps ?? 10;
  if (!Number.isInteger(fps) || fps < 1 || fps > 60)
    throw new SandboxDeskError('invalid_input', `fps must be a whole number 1–60, got ${fps}`);
  if (opts.format !== 'mp4' && opts.format !== 'webm')
    throw new SandboxDeskError('invalid_input', `format must be mp4 or webm, got ${JSON.stringify(opts.format)}`);
  const cursor = new ScreenCursor(dir);
  const s = cursor.span();
  let from = opts.from.getTime();
  let to = opts.to.getTime();
  if (!Number.isFinite(from) || !Number.isFinite(to) || to <= from) {
    throw new SandboxDeskError(
      'invalid_input',
      `the export range must be two valid times, from before to; got ${opts.from.toString()} – ${opts.to.toString()}`,
    );
  }
  if (to < s.start || from > s.end) {
    throw new SandboxDeskError(
      'invalid_input',
      `the export range ${iso(from)} – ${iso(to)} is outside the screen recording, which spans ${iso(s.start)} – ${iso(s.end)}`,
      { hint: 'give --from/--to inside that span (or leave them out for all of it)' },
    );
  }
  // A range reaching past either end is cut to the recording.
  from = Math.max(from, s.start);
  to = Math.min(to, s.end);
  await checkFfmpeg(opts.ffmpeg ?? 'ffmpeg');
  const gaps: GapCard[] = screenGaps(dir, from, to).map((g) => ({ ...g, what: opts.describeGap?.(g) ?? 'not recorded' }));
  // The video's size is the screen's at the first recorded time of the range (after a gap it starts in).
  await cursor.moveTo(gapAt(gaps, from)?.to ?? from);
  // yuv420p needs even sides; a size change later in the range is scaled into this one.
  const width = cursor.fb.width & ~1;
  const height = cursor.fb.height & ~1;
  const totalMs = Math.max(to - from, 1);
  const frames = Math.max(1, Math.ceil((totalMs * fps) / 1000));
  const child = spawn(
    opts.ffmpeg ?? 'ffmpeg',
    [
      '-hide_banner',
      '-loglevel',
      'error',
      '-y',
      '-f',
      'rawvideo',
      '-pix_fmt',
      'rgba',
      '-s',
      `${width}x${height}`,
      '-r',
      String(fps),
      '-i',
      '-',
      ...CODEC[opts.format],
      opts.file,
    ],
    { stdio: ['pipe', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString('utf8')).slice(-4000)));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve(code));
  });
  child.stdin.on('error', () => undefined); // ffmpeg quitting early is reported by its exit code
  const abort = () => child.kill('SIGKILL');
  // One card per gap, drawn once: a gap of an hour is 36 000 frames of the same pixels.
  const cards = new Map<GapCard, Buffer>();
  const cardFrames = new Map<GapCard, number>();
  const minCardFrames = Math.ceil((CARD_MIN_MS * fps) / 1000);
  let written = 0;
  /** Writes one frame; false once ffmpeg has quit. */
  const put = async (chunk: Buffer): Promise<boolean> => {
    if (opts.signal?.aborted) throw new SandboxDeskError('cancelled', 'the video export was cancelled');
    if (!child.stdin.write(chunk)) {
      let onDrain: (() => void) | undefined;
      await Promise.race([new Promise<void>((resolve) => child.stdin.once('drain', (onDrain = resolve))), exited.catch(() => null)]);
      if (onDrain) child.stdin.off('drain', onDrain);
    }
    written++;
    return child.exitCode === null;
  };
  const putCard = async (gap: GapCard): Promise<boolean> => {
    const chunk = cards.get(gap) ?? (await renderGapCard(width, height, gap));
    cards.set(gap, chunk);
    cardFrames.set(gap, (cardFrames.get(gap) ?? 0) + 1);
    return put(chunk);
  };
  /** The gap's card, held until it was on screen CARD_MIN_MS: the video runs that much longer than the range. */
  const hold = async (gap: GapCard): Promise<boolean> => {
    while ((cardFrames.get(gap) ?? 0) < minCardFrames) if (!(await putCard(gap))) return false;
    return true;
  };
  opts.signal?.addEventListener('abort', abort, { once: true });
  try {
    frames: for (let i = 0; i < frames; i++) {
      const t = Math.min(to, from + (i * 1000) / fps);
      for (const g of gaps) if (g.to <= t && !(await hold(g))) break frames;
      const gap = gapAt(gaps, t);
      if (gap) {
        if (!(await putCard(gap))) break;
      } else {
        if (opts.signal?.aborted) throw new SandboxDeskError('cancelled', 'the video export was cancelled');
        await cursor.moveTo(t);
        const fb = cursor.fb;
        const rgba =
          fb.width === width && fb.height === height
            ? fb.data
            : scaleRgba(fb.data, { width, height, screenWidth: fb.width, screenHeight: fb.height });
        // A copy: the stream may hold the chunk while the cursor paints the next frame into the same pixels.
        if (!(await put(Buffer.from(rgba)))) break;
      }
      if (i % fps === 0) opts.onProgress?.(t - from, totalMs);
    }
    // A range that ends inside a gap: its card is held too.
    for (const g of gaps) if (child.exitCode === null) await hold(g);
    child.stdin.end();
    const code = await exited;
    if (opts.signal?.aborted) throw new SandboxDeskError('cancelled', 'the video export was cancelled');
    if (code !== 0)
      throw new SandboxDeskError('internal', `ffmpeg failed (exit ${code}): ${stderr.trim().split('\n').slice(-3).join(' ')}`);
  } catch (err) {
    child.kill('SIGKILL');
    rmSync(opts.file, { force: true });
    throw err;
  } finally {
    opts.signal?.removeEventListener('abort', abort);
  }
  opts.onProgress?.(totalMs, totalMs);
  return {
    file: opts.file,
    format: opts.format,
    durationMs: Math.round((written * 1000) / fps),
    width,
    height,
    gaps: gaps.map((g) => ({ from: iso(g.from), to: iso(g.to), what: g.what })),
  };
}

/** Refuses clearly when there is no ffmpeg to run. */
function checkFfmpeg(bin: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['-version'], { stdio: 'ignore' });
    child.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new SandboxDeskError('backend_unavailable', `cannot export a video: ffmpeg is not installed (${err.code ?? err.message})`, {
          hint: 'install the Debian package ffmpeg (sudo apt-get install ffmpeg; `npm run setup` does)',
        }),
      ),
    );
    child.once('close', () => resolve());
  });
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
