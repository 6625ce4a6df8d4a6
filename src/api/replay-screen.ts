import type { ReplayExportResult, ReplayFrame, ReplayScreenInfo } from '../shared/replay-types.js';

/**
 * What ReplayService needs of the screen recording (recscreen's src/desktop/replay/, issue 16): the
 * four functions agreed in the replay seam. Named here as one interface so the service can be tested
 * with a stand-in and the facade binds the real ones (src/api/replay-screen-binding.ts).
 */
export interface ScreenRecordingApi {
  /** What is in a screen dir; null when there is no recording. */
  screenRecordingInfo(dir: string): ReplayScreenInfo | null;
  /** The screen at `at`; throws not_found / invalid_input (naming the span) for a time outside it. */
  renderScreenAt(
    dir: string,
    at: Date,
    opts?: { maxWidth?: number; maxHeight?: number; format?: 'png' | 'jpeg' | 'webp' },
  ): Promise<Omit<ReplayFrame, 'sandbox' | 'askedAt'>>;
  /** Removes the oldest segments until the dir holds ≤ keepBytes; returns the bytes removed. */
  trimScreenRecording(dir: string, keepBytes: number): number;
  /** The range as a video (ffmpeg); ffmpeg missing → an error naming the Debian package. */
  exportScreenVideo(
    dir: string,
    opts: {
      from: Date;
      to: Date;
      file: string;
      format: 'mp4' | 'webm';
      fps?: number;
      signal?: AbortSignal;
      onProgress?: (doneMs: number, totalMs: number) => void;
    },
  ): Promise<NonNullable<ReplayExportResult['video']>>;
}
