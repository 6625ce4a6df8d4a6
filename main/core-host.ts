import type { Logger } from '../src/platform/log.js';

/** What the window needs from the core: a way to call the contract (answered as `{ok}` / `{error}`). */
export interface CoreHost {
  call(method: unknown, params: unknown): Promise<unknown>;
  close(): Promise<void>;
  /** The core's events pushed over the bridge; absent: the window reads `/ws/events` itself. */
  onEvent?(listener: (event: unknown) => void): { dispose(): void };
}

/**
 * The window is a client of the per-user service (issue 34), like the CLI, `mcp` and `serve`: the
 * service (started on demand) owns the sandboxes, shells, desktops and recordings, so closing the
 * window stops none of them. The service opens a loopback listener for as long as this window holds
 * its connection — the window's pages come from file://, so that Origin is allowed — and every call
 * and stream (screen, terminal, logs, events) goes there with its token, as in the browser mode.
 *
 * The service's native modules (better-sqlite3, node-pty) are built for one runtime: a packaged app's
 * for Electron's (it runs the service as Node with ELECTRON_RUN_AS_NODE), a checkout's for the system
 * Node (`node`, or SANDBOX_DESK_NODE).
 */
export async function startCore(opts: { logger: Logger; packaged: boolean }): Promise<CoreHost> {
  const [{ connect, clientServicePaths }, { holdServe }, { createHttpClient }] = await Promise.all([
    import('../src/client/connect.js'),
    import('../src/client/serve-relay-client.js'),
    import('../src/client/http-client.js'),
  ]);
  const runner = opts.packaged
    ? { execPath: process.execPath, env: { ELECTRON_RUN_AS_NODE: '1' } }
    : { execPath: process.env.SANDBOX_DESK_NODE ?? 'node' };
  const service = await connect({ env: process.env, runner });
  await service.close();
  const held = await holdServe(clientServicePaths({ env: process.env }).socketPath, { port: 0, allowOrigin: 'file://', env: process.env });
  opts.logger.info({ origin: held.grant.origin }, 'the window is a client of the Sandbox Desk service');
  const client = createHttpClient({ origin: held.grant.origin, token: held.grant.token });
  return {
    call: async (method, params) => {
      try {
        return { ok: await client.call(method as never, params as never) };
      } catch (err) {
        const e = err as { code?: unknown; message?: unknown; hint?: unknown };
        return {
          error: {
            code: typeof e.code === 'string' ? e.code : 'internal',
            message: String(e.message ?? err),
            ...(typeof e.hint === 'string' ? { hint: e.hint } : {}),
          },
        };
      }
    },
    close: async () => {
      await client.close();
      held.close();
    },
  };
}
