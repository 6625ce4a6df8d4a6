import type { ApiClient, ApiMethod, ApiParams, ApiResponse, ApiResult } from '../../../src/api/contract.js';

/** What the Electron preload exposes; the only way the packaged app's page reaches the core. */
interface Bridge {
  invoke(method: string, params?: unknown): Promise<unknown>;
  /** The person's clipboard through main (person-clipboard.ts); absent in older preloads. */
  clipboard?: { readText(): Promise<string>; writeText(text: string): Promise<void> };
}

declare global {
  interface Window {
    sandboxDesk?: Bridge;
  }
}

/** Sandbox Desk's own error, as the server sent it: a code to branch on, a message and a hint to show. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly code: string,
    message: string,
    readonly hint?: string,
  ) {
    super(message);
  }
}

/** Turns a transport's `{ok}` / `{error}` into a value or an ApiError; anything else is a transport fault. */
function unwrap<M extends ApiMethod>(method: M, response: unknown): ApiResult<M> {
  if (response && typeof response === 'object') {
    const r = response as ApiResponse<M>;
    if ('error' in r && r.error) throw new ApiError(r.error.code, r.error.message, r.error.hint);
    if ('ok' in r) return r.ok;
  }
  throw new ApiError('internal', `unexpected answer to ${method}`);
}

/** Electron: one IPC `invoke`, validated by the core on the other side. */
export function bridgeClient(bridge: Bridge): ApiClient {
  return {
    async call(method, params) {
      return unwrap(method, await bridge.invoke(method, params));
    },
  };
}

/**
 * Browser mode: POST /api/call/<method> on the page's own origin. The login token became a cookie
 * when the page was opened with ?token=…, so same-origin credentials are all a call needs. Errors come
 * back as an `{error}` body, often with a non-2xx status, so the body is read whatever the status.
 */
export function httpClient(base = ''): ApiClient {
  return {
    async call<M extends ApiMethod>(method: M, params: ApiParams<M>): Promise<ApiResult<M>> {
      let res: Response;
      try {
        res = await fetch(`${base}/api/call/${method}`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          credentials: 'same-origin',
          body: JSON.stringify(params ?? {}),
        });
      } catch (err) {
        throw new ApiError(
          'unreachable',
          `Sandbox Desk's server did not answer (${err instanceof Error ? err.message : String(err)})`,
          'Is `sandbox-desk serve` still running?',
        );
      }
      let body: unknown;
      try {
        body = await res.json();
      } catch {
        throw new ApiError(
          res.status === 401 ? 'refused' : 'internal',
          `${method}: HTTP ${res.status} ${res.statusText} without a JSON body`,
          res.status === 401 ? 'Open the URL Sandbox Desk printed (it carries the login token).' : undefined,
        );
      }
      return unwrap(method, body);
    },
  };
}

/** The client for wherever this page runs: the Electron bridge when present, else the local server. */
export function createApiClient(): ApiClient {
  return window.sandboxDesk?.invoke ? bridgeClient(window.sandboxDesk) : httpClient();
}

/** A message fit for the UI: the server's message, plus its hint when it gave one. */
export function describeError(err: unknown): { message: string; hint?: string; code?: string } {
  if (err instanceof ApiError) return { message: err.message, code: err.code, ...(err.hint ? { hint: err.hint } : {}) };
  return { message: err instanceof Error ? err.message : String(err) };
}
