import { Option, type Command } from 'commander';
import type { SandboxDesk } from '../api/sandbox-desk.js';
import { DEFAULT_AGENT_POLICY, type AgentPolicy } from '../shared/agent-scope.js';
import { SandboxDeskError } from '../shared/errors.js';
import type { Out } from './output.js';
import { collect, sandboxScope } from './token-command.js';

/**
 * `sandbox-desk serve`: the app in any browser, on 127.0.0.1 only, behind a printed login token.
 * With --mcp it also serves the agent bridge at /mcp, for agent tokens only. The service serves it
 * (src/service/serve-relay.ts) while this command runs; the window's child `serve` is the same client.
 */
export function addServeCommand(
  program: Command,
  // Unused since the service serves (its own config's serve.port and agents policy apply); kept so
  // main.ts's wiring is unchanged.
  _core: () => SandboxDesk,
  out: Out,
  _agentPolicy: () => AgentPolicy = () => DEFAULT_AGENT_POLICY,
): void {
  program
    .command('serve')
    .description('serve the app on 127.0.0.1 and print its URL (with a login token); until Ctrl-C')
    .option('--port <n>', 'port on 127.0.0.1 (default: config serve.port; 0, a free one)')
    .option('--json', 'print {"url"} (with --mcp also "mcpUrl" and "agentToken") as one JSON line')
    .option(
      '--mcp',
      'also serve the agent bridge (MCP, streamable HTTP) at /mcp, and print an agent token for it (valid while this server runs)',
    )
    .option('--mcp-sandbox <name>', 'with --mcp: the printed agent token may use only this sandbox (repeatable)', collect, [])
    .addOption(new Option('--allow-origin <origin>', 'also accept streams from this Origin (the Electron window: file://)').hideHelp())
    .action(async (o: { port?: string; json?: boolean; allowOrigin?: string; mcp?: boolean; mcpSandbox: string[] }) => {
      const port = o.port === undefined ? undefined : Number(o.port);
      if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535))
        throw new SandboxDeskError('invalid_input', `--port must be 0-65535, got ${JSON.stringify(o.port)}`);
      if (o.mcpSandbox.length && !o.mcp)
        throw new SandboxDeskError('invalid_input', '--mcp-sandbox scopes the agent token of --mcp', { hint: 'add --mcp' });
      sandboxScope(o.mcpSandbox);
      // A client of the service: the service opens the loopback listener (default port: its config
      // serve.port) for as long as this process holds its connection, and closes it when we go.
      const [{ connect, clientServicePaths }, { holdServe }] = await Promise.all([
        import('../client/connect.js'),
        import('../client/serve-relay-client.js'),
      ]);
      const client = await connect({ env: process.env });
      await client.close();
      const held = await holdServe(clientServicePaths({ env: process.env }).socketPath, {
        ...(port === undefined ? {} : { port }),
        mcp: o.mcp === true,
        mcpSandboxes: o.mcpSandbox,
        ...(o.allowOrigin ? { allowOrigin: o.allowOrigin } : {}),
        env: process.env,
      });
      const { grant } = held;
      const mcpUrl = o.mcp ? `${grant.origin}/mcp` : undefined;
      if (o.json) out.stdout(JSON.stringify({ url: grant.url, ...(mcpUrl ? { mcpUrl, agentToken: grant.agentToken } : {}) }) + '\n');
      else {
        out.stdout(
          `Sandbox Desk is serving on 127.0.0.1 only. Open:\n  ${grant.url}\n(the token in the URL is the login for you, not for agents; Ctrl-C to stop)\n`,
        );
        if (mcpUrl) {
          const scope = o.mcpSandbox.length ? `sandboxes ${o.mcpSandbox.join(', ')} only` : 'every sandbox';
          out.stdout(
            `MCP for agents (streamable HTTP): ${mcpUrl}\n  header "Authorization: Bearer ${grant.agentToken}"\n  (an agent token: the MCP tools only, ${scope}, as the sandbox user; valid while this server runs — lasting ones: sandbox-desk token create)\n`,
          );
        }
      }
      await new Promise<void>((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
        // The service gone (stopped, killed): this client has nothing left to hold.
        void held.closed.then(resolve);
      });
      held.close();
    });
}
