/**
 * PLACEHOLDER until the service's `connect()` (src/client/connect.ts, issue 34 item 1) is merged: the
 * lead points src/client/sdk.ts at that module instead and removes this file.
 */
import { SandboxDeskError } from '../shared/errors.js';
import type { DeskClient } from './http-client.js';

export interface ConnectOptions {
  /** The data directory whose service to reach (default: the user's). */
  dataDir?: string;
}

export function connectClient(_opts: ConnectOptions = {}): Promise<DeskClient> {
  return Promise.reject(
    new SandboxDeskError('unsupported', 'connect() is not built yet: the Sandbox Desk service is not part of this build', {
      hint: 'use createHttpClient({ origin, token }) against `sandbox-desk serve` meanwhile',
    }),
  );
}
