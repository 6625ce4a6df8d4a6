import type { Command } from 'commander';
import type { SandboxDesk } from '../api/sandbox-desk.js';
import { DEFAULT_AGENT_POLICY, type AgentPolicy } from '../shared/agent-scope.js';
import { printJson, type Out } from './output.js';
import { collect, sandboxScope } from './token-command.js';

/** `sandbox-desk mcp` (the agent bridge over stdio) and `sandbox-desk log` (its receipts). */
export function addMcpCommands(
  program: Command,
  core: () => SandboxDesk,
  out: Out,
  agentPolicy: () => AgentPolicy = () => DEFAULT_AGENT_POLICY,
): void {
  program
    .command('mcp')
    .description('serve the agent bridge (MCP) over stdio; RUNLOOP_STEP_ID / STEP_OUTPUT_DIR mark every call as step-owned')
    .option('--sandbox <name>', 'the agent may use only this sandbox (repeatable; default: every sandbox)', collect, [])
    .action(async (o: { sandbox: string[] }) => {
      // Loaded here, not at the top: the MCP SDK is heavy and `__complete`/`--help` do not need it.
      const [{ createMcpServer, stepFromEnvironment }, { LimitedStdioTransport }] = await Promise.all([
        import('../mcp/mcp-server.js'),
        import('../mcp/stdio-transport.js'),
      ]);
      // No token over stdio: the agent policy and the scope are enforced by the tools themselves.
      const server = createMcpServer(core(), {
        stepFromEnv: stepFromEnvironment(process.env),
        scope: sandboxScope(o.sandbox),
        policy: agentPolicy(),
      });
      const transport = new LimitedStdioTransport();
      // stdout is the protocol channel from here on: nothing else may print to it.
      await server.connect(transport);
      await new Promise<void>((resolve) => {
        transport.onclose = () => resolve();
        // End of input is not the end of the answers: every request already read gets its reply first.
        process.stdin.once('end', () => void transport.idle().then(resolve));
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      });
      await server.close();
    });

  program
    // `calls`, not `log`: beside `logs` (a sandbox's output) the two read as one command misspelt.
    // `log` stays as an alias so scripts keep working.
    .command('calls [name]')
    .alias('log')
    .description(
      "the agents' call log: every MCP/CLI tool call (time, sandbox, session, tool, cwd used and observed, exit code, warnings); also `log`. A sandbox's own output is `logs`",
    )
    .option('--session <key>', 'only this session')
    .option('--limit <n>', 'the last N calls', '100')
    .option('--jsonl', 'every matching call, as JSON lines (for export)')
    .option('--json', 'machine-readable output')
    .action((name: string | undefined, o: { session?: string; limit: string; jsonl?: boolean; json?: boolean }) => {
      const log = core().store.callLog;
      if (o.jsonl) return out.stdout(log.jsonl({ sandbox: name, session: o.session }));
      const entries = log.list({ sandbox: name, session: o.session, limit: Number(o.limit) || 100 });
      if (o.json) return printJson(out, entries);
      if (entries.length === 0) return out.stdout('No agent calls logged yet.\n');
      for (const e of entries) {
        const where = e.cwdObserved && e.cwdObserved !== e.cwdUsed ? `${e.cwdUsed ?? '-'} → ${e.cwdObserved}` : (e.cwdUsed ?? '-');
        const how = e.error ?? (e.exitCode === null ? 'ok' : `exit ${e.exitCode}`);
        out.stdout(
          `${e.at}  ${e.sandbox ?? '-'}  ${e.session ?? '-'}  ${e.tool}  ${where}  ${how}${e.warnings.length ? `  [${e.warnings.map((w) => w.code).join(', ')}]` : ''}\n`,
        );
      }
    });
}
