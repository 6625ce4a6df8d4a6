import type * as screenRecording from '../desktop/replay/index.js';

/**
 * What ReplayService needs of the screen recording (src/desktop/replay/, issue 16): the four
 * functions agreed in the replay seam, typed from the module itself, so the service can be tested with
 * a stand-in and the facade binds the real ones (src/api/replay-screen-binding.ts).
 */
export type ScreenRecordingApi = Pick<
  typeof screenRecording,
  'screenRecordingInfo' | 'renderScreenAt' | 'trimScreenRecording' | 'exportScreenVideo' | 'screenGaps'
>;
