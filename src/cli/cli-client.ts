/**
 * Where every CLI command gets its client: the one function that says how the CLI reaches Sandbox Desk.
 * Commands call the contract through the DeskClient it returns and nothing else (issue 34, item 2).
 */
import type { SandboxDesk } from '../api/sandbox-desk.js';
import { createHttpClient, type DeskClient } from '../client/http-client.js';
import { ensureNestedShellLevel } from '../shared/shell-level.js';

export interface OpenClientOptions {
  /** The CLI's lazily built core: used only for a command that asked for a core of its own. */
  core: () => SandboxDesk;
  env: NodeJS.ProcessEnv;
  /**
   * The command was given --plugin or --plugin-isolation: those shape one core's backends, and the
   * service's core is everybody's (it keeps the configured plugins), so this one command gets a core of
   * its own, served to itself, as every command did before the service.
   */
  ownCore: boolean;
}

/**
 * The CLI's client: the per-user service (src/client/connect.ts: found, or started on demand), or, for
 * a command with its own plugins, this process's core on an ephemeral loopback LocalServer — through
 * the same HTTP contract either way.
 */
export async function openClient(o: OpenClientOptions): Promise<DeskClient> {
  if (!o.ownCore) {
    // Lazily checked: a command's first call goes straight to the socket (no /service/info round-trip).
    const { connectLazily } = await import('../client/connect.js');
    return connectLazily({ env: o.env });
  }
  // As in the service: this core's bash scripts skip ~/.bashrc however the CLI was started (shell-level.ts).
  ensureNestedShellLevel(process.env);
  // Loaded on first use, like the core itself: --version, --help and Tab never pay for the server.
  const { LocalServer } = await import('../api/local-server.js');
  const server = new LocalServer({ desk: o.core() });
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
