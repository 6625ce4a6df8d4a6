import type { SandboxDesk } from '../src/api/sandbox-desk.js';
import { asSandboxDeskError } from '../src/errors.js';

export const INVOKE_CHANNEL = 'sandbox-desk:invoke';

/** The methods the renderer may call: the core's public API, nothing else. */
const METHODS = {
  listSandboxes: (d: SandboxDesk) => d.listSandboxes(),
  inspectSandbox: (d: SandboxDesk, p: { name: string }) => d.inspectSandbox(p.name),
  createSandbox: (d: SandboxDesk, p: Parameters<SandboxDesk['createSandbox']>[0]) => d.createSandbox(p),
  startSandbox: (d: SandboxDesk, p: { name: string }) => d.startSandbox(p.name),
  stopSandbox: (d: SandboxDesk, p: { name: string }) => d.stopSandbox(p.name),
  removeSandbox: (d: SandboxDesk, p: { name: string; force?: boolean }) => d.removeSandbox(p.name, { force: p.force ?? false }),
  listSessions: (d: SandboxDesk, p: { sandbox: string }) => d.listSessions(p.sandbox),
  exec: async (d: SandboxDesk, p: Parameters<SandboxDesk['exec']>[0]) => {
    const { stdoutBytes: _o, stderrBytes: _e, ...result } = await d.exec(p);
    return result;
  },
} as const;

export type BridgeMethod = keyof typeof METHODS;

/** Runs one bridge call; errors come back as data ({error}) so the renderer never sees a stack. */
export async function dispatch(desk: SandboxDesk, method: unknown, params: unknown): Promise<{ ok: unknown } | { error: ReturnType<ReturnType<typeof asSandboxDeskError>['toJSON']> }> {
  if (typeof method !== 'string' || !Object.hasOwn(METHODS, method)) {
    return { error: { code: 'invalid_input', message: `unknown method ${JSON.stringify(method)}` } };
  }
  try {
    const fn = METHODS[method as BridgeMethod] as (d: SandboxDesk, p: unknown) => Promise<unknown>;
    return { ok: await fn(desk, (params ?? {}) as never) };
  } catch (err) {
    return { error: asSandboxDeskError(err).toJSON() };
  }
}
