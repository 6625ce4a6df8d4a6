/**
 * Where every CLI command gets its client: the one function that says how the CLI reaches Sandbox Desk.
 * Commands call the contract through the DeskClient it returns and nothing else (issue 34, item 2).
 */
import type { SandboxDesk } from '../api/sandbox-desk.js';
import { createHttpClient, type DeskClient } from '../client/http-client.js';

export interface OpenClientOptions {
  /**
   * INTERIM (until the service's `connect()` is merged): the core this process serves to itself. The
   * CLI's main gives its lazily built core, so `mcp`/`serve` and the commands share one.
   */
  core: () => SandboxDesk;
}

/**
 * The CLI's client.
 *
 * INTERIM SHIM — to be replaced by `connect()` (src/client/connect.ts, the per-user service) at merge:
 * it loads the core in this process, serves it on an ephemeral loopback LocalServer (no desktop
 * recording: a one-command process records nothing, as before) and returns an HTTP client of it, so
 * every command already goes through HTTP and the contract. Closing the client closes that server;
 * the core is closed by whoever made it (main).
 */
export async function openClient(o: OpenClientOptions): Promise<DeskClient> {
  // Loaded on first use, like the core itself: --version, --help and Tab never pay for the server.
  const { LocalServer } = await import('../api/local-server.js');
  const server = new LocalServer({ desk: o.core(), recordDesktops: false });
  const origin = await server.listen();
  const client = createHttpClient({ origin, token: server.token });
  return {
    ...client,
    async close() {
      await client.close();
      await server.close();
    },
  };
}
