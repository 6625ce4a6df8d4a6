import type { SandboxInfo } from '../../src/api/contract.js';

/** What the preload exposes; the only way the page reaches the core. */
interface Bridge {
  invoke(method: string, params?: unknown): Promise<{ ok: unknown } | { error: { code: string; message: string; hint?: string } }>;
}

declare global {
  interface Window {
    sandboxDesk?: Bridge;
  }
}

export class BridgeError extends Error {
  constructor(readonly code: string, message: string, readonly hint?: string) {
    super(message);
  }
}

async function call<T>(method: string, params?: unknown): Promise<T> {
  if (!window.sandboxDesk) throw new BridgeError('unavailable', 'Sandbox Desk core is not connected');
  const r = await window.sandboxDesk.invoke(method, params);
  if ('error' in r) throw new BridgeError(r.error.code, r.error.message, r.error.hint);
  return r.ok as T;
}

export const api = {
  listSandboxes: () => call<SandboxInfo[]>('listSandboxes'),
};
