import { Option, type Command } from 'commander';
import { LocalServer } from '../api/local-server.js';
import type { SandboxDesk } from '../api/sandbox-desk.js';
import { SandboxDeskError } from '../shared/errors.js';
import { stepFromEnvironment } from '../mcp/mcp-server.js';
import type { Out } from './output.js';

/** `sandbox-desk serve`: the app in any browser, on 127.0.0.1 only, behind a printed login token. */
export function addServeCommand(program: Command, core: () => SandboxDesk, out: Out): void {
  program
    .command('serve')
    .description('serve the app on 127.0.0.1 and print its URL (with a login token); until Ctrl-C')
    .option('--port <n>', 'port on 127.0.0.1 (default: config serve.port; 0, a free one)')
    .option('--json', 'print {"url"} as one JSON line')
    .option('--mcp', 'also serve the agent bridge (MCP, streamable HTTP) at /mcp, with the same token as a Bearer header')
    .addOption(new Option('--allow-origin <origin>', 'also accept streams from this Origin (the Electron window: file://)').hideHelp())
    .action(async (o: { port?: string; json?: boolean; allowOrigin?: string; mcp?: boolean }) => {
      const port = o.port === undefined ? core().config.serve.port : Number(o.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new SandboxDeskError('invalid_input', `--port must be 0-65535, got ${JSON.stringify(o.port)}`);
      const server = new LocalServer({
        desk: core(),
        port,
        extraOrigins: o.allowOrigin ? [o.allowOrigin] : [],
        ...(o.mcp ? { mcp: { stepFromEnv: stepFromEnvironment(process.env) } } : {}),
      });
      try {
        await server.listen();
      } catch (err) {
        throw new SandboxDeskError('refused', `cannot listen on 127.0.0.1:${port}: ${(err as Error).message}`, { hint: 'choose another --port, or omit it' });
      }
      const mcpUrl = o.mcp ? `${server.origin}/mcp` : undefined;
      if (o.json) out.stdout(JSON.stringify({ url: server.appUrl(), ...(mcpUrl ? { mcpUrl, token: server.token } : {}) }) + '\n');
      else {
        out.stdout(`Sandbox Desk is serving on 127.0.0.1 only. Open:\n  ${server.appUrl()}\n(the token in the URL is the login; Ctrl-C to stop)\n`);
        if (mcpUrl) out.stdout(`MCP (streamable HTTP): ${mcpUrl} with header "Authorization: Bearer ${server.token}"\n`);
      }
      await new Promise<void>((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      });
      await server.close();
    });
}
