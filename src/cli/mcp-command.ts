import type { Command } from 'commander';
import type { DeskClient } from '../client/http-client.js';
import { SandboxDeskError } from '../shared/errors.js';
import { readCallLog } from './call-log-reader.js';
import { printJson, type Out } from './output.js';
import { collect, sandboxScope } from './token-command.js';

/** `sandbox-desk mcp` (the agent bridge over stdio) and `sandbox-desk log` (its receipts). */
export function addMcpCommands(
  program: Command,
  // The service runs the MCP server (its own config's agents policy applies) and keeps the call log:
  // both commands are its clients and build no core.
  client: () => Promise<DeskClient>,
  out: Out,
): void {
  program
    .command('mcp')
    .description('serve the agent bridge (MCP) over stdio; RUNLOOP_STEP_ID / STEP_OUTPUT_DIR mark every call as step-owned')
    .option('--sandbox <name>', 'the agent may use only this sandbox (repeatable; default: every sandbox)', collect, [])
    .action(async (o: { sandbox: string[] }) => {
      // Checked here too, so a wrong name fails before anything starts.
      sandboxScope(o.sandbox);
      // A client of the service: it runs the MCP server (its shells outlive this process); this
      // process only relays stdin and stdout, byte for byte.
      const [{ connect, clientServicePaths }, { relayMcpStdio }] = await Promise.all([
        import('../client/connect.js'),
        import('../client/mcp-relay-client.js'),
      ]);
      const client = await connect({ env: process.env });
      await client.close();
      const stop = new AbortController();
      const onSignal = (): void => stop.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      try {
        await relayMcpStdio({
          socketPath: clientServicePaths({ env: process.env }).socketPath,
          sandboxes: o.sandbox,
          env: process.env,
          input: process.stdin,
          output: process.stdout,
          stop: stop.signal,
        });
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
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
    .action(async (name: string | undefined, o: { session?: string; limit: string; jsonl?: boolean; json?: boolean }) => {
      const limit = Number(o.limit);
      if (!Number.isInteger(limit) || limit < 1)
        throw new SandboxDeskError('invalid_input', `--limit ${JSON.stringify(o.limit)} is not a positive whole number`, {
          hint: 'e.g. --limit 50, or --jsonl for every call',
        });
      const filter = { sandbox: name, session: o.session };
      const c = await client();
      if (o.jsonl) {
        // Every matching call, oldest first, one JSON object a line.
        const all = await readCallLog(c, filter, Number.POSITIVE_INFINITY);
        return out.stdout(all.map((e) => JSON.stringify(e)).join('\n') + '\n');
      }
      const entries = await readCallLog(c, filter, limit);
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
