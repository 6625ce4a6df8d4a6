import { exportScreenVideo, renderScreenAt, screenGaps, screenRecordingInfo, trimScreenRecording } from '../desktop/replay/index.js';
import type { ScreenRecordingApi } from './replay-screen.js';

/** The screen recording functions the facade gives ReplayService: recscreen's src/desktop/replay/. */
export const screenRecordings: ScreenRecordingApi = {
  screenRecordingInfo,
  renderScreenAt,
  trimScreenRecording,
  exportScreenVideo,
  screenGaps,
};
