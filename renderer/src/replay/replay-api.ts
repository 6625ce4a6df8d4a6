import type { ApiClient } from '../../../src/api/contract.js';
import type { ReplayEvent, ReplayExportResult, ReplayFrame, ReplayRecording } from '../../../src/shared/replay-types.js';

/**
 * The replay methods as the view uses them (issue 16's agreement, /tmp replay-shared: `replayList`,
 * `replayEvents`, `replayFrame`, `replayCast`, `replayExport`). They are typed here, beside the view,
 * so the view builds on its own; once the API table has them this file still holds (it only narrows
 * the client to these shapes).
 */
export interface ReplayMethods {
  replayList: { params: { sandbox?: string }; result: { recordings: ReplayRecording[] } };
  replayEvents: {
    params: { sandbox: string; since?: string; until?: string };
    result: { sandbox: string; startedAt: string | null; endedAt: string | null; events: ReplayEvent[] };
  };
  replayFrame: {
    params: { sandbox: string; at: string; maxWidth?: number; maxHeight?: number; format?: 'png' | 'jpeg' | 'webp' };
    result: ReplayFrame;
  };
  replayCast: { params: { sandbox: string; terminalId: string }; result: { cast: string } };
  replayExport: {
    params: { sandbox: string; from?: string; to?: string; out: string; format?: 'mp4' | 'webm' };
    result: ReplayExportResult;
  };
}
export type ReplayMethod = keyof ReplayMethods;

export type ReplayEventsAnswer = ReplayMethods['replayEvents']['result'];

/** One replay call through the window's client (the Electron bridge or the local server). */
export function replayCall<M extends ReplayMethod>(
  api: ApiClient,
  method: M,
  params: ReplayMethods[M]['params'],
): Promise<ReplayMethods[M]['result']> {
  const loose = api as unknown as { call(method: string, params: unknown): Promise<unknown> };
  return loose.call(method, params) as Promise<ReplayMethods[M]['result']>;
}

/** The desktop's recording indicator (DesktopStatus.recording, issue 16): absent on a core without it. */
export interface RecordingIndicator {
  on: boolean;
  bytes: number;
  since: string | null;
  warning: string | null;
}

export function recordingOf(status: object | null | undefined): RecordingIndicator | null {
  const r: unknown = status && 'recording' in status ? status.recording : null;
  if (!r || typeof r !== 'object') return null;
  const f = r as Record<string, unknown>;
  return {
    on: f.on === true,
    bytes: typeof f.bytes === 'number' ? f.bytes : 0,
    since: typeof f.since === 'string' ? f.since : null,
    warning: typeof f.warning === 'string' ? f.warning : null,
  };
}
