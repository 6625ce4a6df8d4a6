import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { SandboxDesk } from '../api/sandbox-desk.js';
import type { CheckpointToolKit } from './checkpoint-tools.js';
import { out, structured } from './tool-output.js';

/** A pool as `pool_list` answers it (src/shared/pool-types.ts PoolView). */
const PoolOut = out.object({
  key: z.string().describe("the template's short id"),
  template: out.object({
    image: z.string(),
    cpus: z.number().nullable().describe('the CPU limit a claimed sandbox gets; null: none'),
    memoryMiB: z.number().nullable().describe('the memory limit a claimed sandbox gets; null: none'),
    desktop: z.boolean().describe('true: its sandboxes wait with the bot desktop running'),
  }),
  description: z.string().describe('the template in one line, as `sandbox-desk pool list` shows it'),
  size: z.number().int().describe('how many ready sandboxes the pool keeps'),
  ready: z.number().int(),
  filling: z.number().int().describe('being made now'),
  state: z
    .enum(['filling', 'full', 'stopped', 'retrying'])
    .describe('stopped: refill stopped (a full disk) until a person sets the pool again; retrying: the last fill failed'),
  warning: z.string().nullable().describe('why it stopped or why the last fill failed'),
  memoryMiB: z.number().describe('what its sandboxes may hold while they wait'),
});

/**
 * The warm pools seen from the agent's side (issue 37): read-only. Listing them tells an agent whether
 * the sandboxes it is given start warm; it names no pooled sandbox (they are nobody's until claimed),
 * so a scoped token may read it like `image_list`.
 *
 * There is no pool_set or pool_drain (nor a tool that creates sandboxes, which is what claims from a
 * pool): a pool holds host memory up to `pools.memoryBudgetMiB`, keeps containers of any image the
 * engine has running ahead, and is saved in the app's config — host-level decisions of the person
 * (`sandbox-desk pool set|drain`, behind the UI token). An agent token is a key to the sandboxes of its
 * scope and opens no host-level action (no config, token, image build or plugin tool either).
 */
export function registerPoolTools(server: McpServer, desk: SandboxDesk, k: CheckpointToolKit): void {
  server.registerTool(
    'pool_list',
    {
      description:
        "The warm pools: per template (image, CPU and memory limits, desktop on/off) how many ready sandboxes it keeps (size), how many wait ready now, its state (filling, full, stopped with a warning such as a full disk, retrying) and the memory the pools hold against the budget. A sandbox created with exactly a pool's template starts warm (its container, and its desktop, already running); others are made cold. Read-only: pools are set by a person (`sandbox-desk pool set|drain`).",
      inputSchema: z.object({}).strict(),
      outputSchema: out.object({
        memoryBudgetMiB: z.number().describe('config pools.memoryBudgetMiB: the most the pools may hold'),
        memoryMiB: z.number().describe('what the pools hold while they wait'),
        refilling: z.boolean().describe('true when the process answering refills the pools (the service)'),
        pools: z.array(PoolOut).describe('empty: no pool is configured (the default)'),
      }),
    },
    k.tool('pool_list', async () => ({ result: structured(desk.pools.list()), receipt: {} })),
  );
}
