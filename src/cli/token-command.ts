import type { Command } from 'commander';
import { SandboxName } from '../api/contract.js';
import type { DeskClient } from '../client/http-client.js';
import { ANY_SANDBOX, type AgentScope } from '../shared/agent-scope.js';
import { SandboxDeskError } from '../shared/errors.js';
import { printJson, type Out } from './output.js';

/** commander: a repeatable option. */
export const collect = (value: string, previous: string[]): string[] => [...previous, value];

/** The scope of --sandbox/--mcp-sandbox names (checked as sandbox names); none: every sandbox. */
export function sandboxScope(names: string[]): AgentScope {
  for (const n of names) {
    const r = SandboxName.safeParse(n);
    if (!r.success)
      throw new SandboxDeskError('invalid_input', `--sandbox ${JSON.stringify(n)}: ${r.error.issues[0]?.message ?? 'not a sandbox name'}`);
  }
  return names.length ? { tools: 'mcp', sandboxes: [...new Set(names)] } : ANY_SANDBOX;
}

/** `sandbox-desk token create|list|rm`: agent tokens for the MCP tools at `serve --mcp`'s /mcp. */
export function addTokenCommands(program: Command, client: () => Promise<DeskClient>, out: Out): void {
  const token = program
    .command('token')
    .description("agent tokens: they open the MCP tools of `serve --mcp` (never the app's API), optionally for named sandboxes only");

  token
    .command('create')
    .description('make an agent token; it is shown once (only its hash is kept)')
    .option('--sandbox <name>', 'the token may use only this sandbox (repeatable; default: every sandbox)', collect, [])
    .option('--label <text>', 'a name to recognise it by in `token list` (and to remove it by)')
    .option('--json', 'machine-readable output')
    .action(async (o: { sandbox: string[]; label?: string; json?: boolean }) => {
      const scope = sandboxScope(o.sandbox);
      if (o.label !== undefined && !/^[A-Za-z0-9_.-]{1,64}$/.test(o.label))
        throw new SandboxDeskError('invalid_input', `--label ${JSON.stringify(o.label)}: 1-64 letters, digits, _ . or -`);
      const { token: secret, info } = await (
        await client()
      ).call('agentTokenCreate', { label: o.label, ...(scope.sandboxes ? { sandboxes: scope.sandboxes } : {}) });
      if (o.json) return printJson(out, { token: secret, ...info });
      out.stdout(`${secret}\n`);
      out.stderr(
        `sandbox-desk: agent token ${info.id} (${info.scope.sandboxes ? `sandboxes ${info.scope.sandboxes.join(', ')}` : 'every sandbox'}): give it to the agent as "Authorization: Bearer <token>" for the /mcp of \`sandbox-desk serve --mcp\`; it is not shown again\n`,
      );
    });

  token
    .command('list')
    .description('the agent tokens (ids, labels, scopes; never the secrets)')
    .option('--json', 'machine-readable output')
    .action(async (o: { json?: boolean }) => {
      const list = await (await client()).call('agentTokenList', {});
      if (o.json) return printJson(out, list);
      if (list.length === 0) return out.stdout('No agent tokens. Make one: sandbox-desk token create [--sandbox NAME]\n');
      for (const t of list)
        out.stdout(
          `${t.id}  ${t.label ?? '-'}  ${t.scope.sandboxes ? t.scope.sandboxes.join(',') : '(every sandbox)'}  created ${t.createdAt}  used ${t.lastUsedAt ?? 'never'}\n`,
        );
    });

  token
    .command('rm <id>')
    .description('remove an agent token (by id or label); a running server refuses it from the next request')
    .action(async (id: string) => {
      await (await client()).call('agentTokenRemove', { id });
      out.stdout(`removed ${id}\n`);
    });
}
