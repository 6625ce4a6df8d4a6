import { Option, type Command } from 'commander';
import type { SandboxDesk } from '../api/sandbox-desk.js';
import { DEFAULT_AGENT_POLICY, type AgentPolicy } from '../shared/agent-scope.js';
import { SandboxDeskError } from '../shared/errors.js';
import type { Out } from './output.js';
import { collect, sandboxScope } from './token-command.js';

/**
 * `sandbox-desk serve`: the app in any browser, on 127.0.0.1 only, behind a printed login token.
 * With --mcp it also serves the agent bridge at /mcp, for agent tokens only; the MCP handler is
 * injected here, so the API layer never imports the MCP layer.
 */
export function addServeCommand(
  program: Command,
  core: () => SandboxDesk,
  out: Out,
  agentPolicy: () => AgentPolicy = () => DEFAULT_AGENT_POLICY,
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
      const port = o.port === undefined ? core().config.serve.port : Number(o.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw new SandboxDeskError('invalid_input', `--port must be 0-65535, got ${JSON.stringify(o.port)}`);
      if (o.mcpSandbox.length && !o.mcp)
        throw new SandboxDeskError('invalid_input', '--mcp-sandbox scopes the agent token of --mcp', { hint: 'add --mcp' });
      const desk = core();
      // Loaded here, not at the top: `__complete` and `--help` build this command tree and must stay fast.
      const [{ LocalServer }, { createMcpHttpHandler }, { stepFromEnvironment }] = await Promise.all([
        import('../api/local-server.js'),
        import('../mcp/mcp-http.js'),
        import('../mcp/mcp-server.js'),
      ]);
      const server = new LocalServer({
        desk,
        port,
        extraOrigins: o.allowOrigin ? [o.allowOrigin] : [],
        mcp: o.mcp
          ? {
              handler: createMcpHttpHandler(desk, { stepFromEnv: stepFromEnvironment(process.env), policy: agentPolicy() }),
              sessionAgentScope: sandboxScope(o.mcpSandbox),
              agentTokens: desk.store.agentTokens,
            }
          : undefined,
      });
      try {
        await server.listen();
      } catch (err) {
        throw new SandboxDeskError('refused', `cannot listen on 127.0.0.1:${port}: ${(err as Error).message}`, {
          hint: 'choose another --port, or omit it',
        });
      }
      const mcpUrl = o.mcp ? `${server.origin}/mcp` : undefined;
      if (o.json) out.stdout(JSON.stringify({ url: server.appUrl(), ...(mcpUrl ? { mcpUrl, agentToken: server.agentToken } : {}) }) + '\n');
      else {
        out.stdout(
          `Sandbox Desk is serving on 127.0.0.1 only. Open:\n  ${server.appUrl()}\n(the token in the URL is the login for you, not for agents; Ctrl-C to stop)\n`,
        );
        if (mcpUrl) {
          const scope = o.mcpSandbox.length ? `sandboxes ${o.mcpSandbox.join(', ')} only` : 'every sandbox';
          out.stdout(
            `MCP for agents (streamable HTTP): ${mcpUrl}\n  header "Authorization: Bearer ${server.agentToken}"\n  (an agent token: the MCP tools only, ${scope}, as the sandbox user; valid while this server runs — lasting ones: sandbox-desk token create)\n`,
          );
        }
      }
      await new Promise<void>((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      });
      await server.close();
    });
}
