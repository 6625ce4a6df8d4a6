/**
 * The screen recording (issue 16), as the replay service uses it: the recorder tapped on the live RFB
 * connection (screen-recorder.ts), the file format (rfbrec-format.ts), reading it back
 * (screen-replay.ts) and the video export (screen-export.ts).
 */
export {
  renderScreenAt,
  screenGaps,
  screenRecordingInfo,
  screenRecordTimes,
  trimScreenRecording,
  ScreenCursor,
  type ScreenGap,
} from './screen-replay.js';
export { CARD_MIN_MS, exportScreenVideo, type ExportScreenOptions } from './screen-export.js';
export { ScreenRecorder, type RecordingStatus, type RecordSource, type SegmentWriter } from './screen-recorder.js';
