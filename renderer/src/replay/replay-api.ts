import type { ApiClient, ApiParams, ApiResult } from '../../../src/api/contract.js';

/** The replay methods of the API the view uses (issue 16: `replayList` … `replayExport`). */
export type ReplayMethod = 'replayList' | 'replayEvents' | 'replayFrame' | 'replayCast' | 'replayExport';
export type ReplayMethods = { [M in ReplayMethod]: { params: ApiParams<M>; result: ApiResult<M> } };

export type ReplayEventsAnswer = ApiResult<'replayEvents'>;

/** One replay call through the window's client (the Electron bridge or the local server). */
export function replayCall<M extends ReplayMethod>(api: ApiClient, method: M, params: ApiParams<M>): Promise<ApiResult<M>> {
  return api.call(method, params);
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
