import { SandboxDeskError } from '../shared/errors.js';
import type { ScreenRecordingApi } from './replay-screen.js';

/**
 * The screen recording functions the facade gives ReplayService. Until recscreen's
 * src/desktop/replay/ is merged this says "no screen recording" (terminals and events replay
 * without it); after the merge it binds the real functions.
 */
export const screenRecordings: ScreenRecordingApi = {
  screenRecordingInfo: () => null,
  renderScreenAt: () => Promise.reject(new SandboxDeskError('not_found', 'this build records no screen')),
  trimScreenRecording: () => 0,
  exportScreenVideo: () => Promise.reject(new SandboxDeskError('unsupported', 'this build records no screen')),
};
