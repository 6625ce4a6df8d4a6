import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { CheckpointId, FORK_COUNT_MAX, SandboxName } from '../api/contract.js';
import type { SandboxDesk } from '../api/sandbox-desk.js';
import { SandboxDeskError } from '../shared/errors.js';
import type { AgentGuard } from './agent-policy.js';
import { CheckpointOut, SandboxOut, SessionOut, out, structured } from './tool-output.js';

/** What mcp-server.ts lends these tools: its call wrapper (errors as data, the call log) and the agent's scope. */
export interface CheckpointToolKit {
  tool<A extends Record<string, unknown>>(
    name: string,
    fn: (args: A) => Promise<{ result: CallToolResult; receipt: Record<string, never> }>,
  ): (args: A) => Promise<CallToolResult>;
  guard: AgentGuard;
}

/**
 * The checkpoint tools (issue 15): save a sandbox before letting an agent loose, go back when it wrecked
 * it, branch it into copies. A fork's new names must be inside the agent's scope too, so a scoped agent
 * cannot make sandboxes it could not use.
 */
export function registerCheckpointTools(server: McpServer, desk: SandboxDesk, k: CheckpointToolKit): void {
  const sandbox = SandboxName.describe('the sandbox name (see sandbox_list)');
  const checkpoint = CheckpointId.describe('the checkpoint id (see checkpoint_list)');
  const done = (value: object) => ({ result: structured(value), receipt: {} as Record<string, never> });
  const warnings = z.array(out.warning);

  server.registerTool(
    'sandbox_checkpoint',
    {
      description:
        "Save a sandbox's disk and every session's working directory as a checkpoint (memory: also its running processes, where the backend can; refused with the reason where it cannot). Returns the checkpoint id.",
      inputSchema: { sandbox, label: z.string().max(200).optional(), memory: z.boolean().optional() },
      outputSchema: out.object({ checkpoint: CheckpointOut, warnings }),
    },
    k.tool('sandbox_checkpoint', async (a: { sandbox: string; label?: string; memory?: boolean }) =>
      done(await desk.checkpoints.checkpoint({ sandbox: a.sandbox, label: a.label, memory: a.memory ?? false })),
    ),
  );

  server.registerTool(
    'checkpoint_list',
    {
      description:
        'Checkpoints (of one sandbox when given), newest first: {checkpoints: [{id, label, time, size, memory, broken (with why)}]}.',
      inputSchema: { sandbox: SandboxName.optional() },
      outputSchema: out.object({ checkpoints: z.array(CheckpointOut) }),
    },
    k.tool('checkpoint_list', async (a: { sandbox?: string }) => {
      if (a.sandbox !== undefined) k.guard.checkSandbox(a.sandbox);
      return done({ checkpoints: (await desk.checkpoints.list(a.sandbox)).filter((c) => k.guard.mayUse(c.sandbox)) });
    }),
  );

  server.registerTool(
    'sandbox_restore',
    {
      description:
        'Put a sandbox back to one of its own checkpoints. Its shells and terminals restart; each session is at the cwd it had then, re-measured (a directory that is gone is walked, with a warning).',
      inputSchema: { sandbox, checkpoint },
      outputSchema: out.object({ sandbox: SandboxOut, sessions: z.array(SessionOut), warnings }),
    },
    k.tool('sandbox_restore', async (a: { sandbox: string; checkpoint: string }) =>
      done(await desk.checkpoints.restore(a.sandbox, a.checkpoint)),
    ),
  );

  server.registerTool(
    'sandbox_fork',
    {
      description: `New sandboxes from a checkpoint, each independent: named as, or as-1 … as-N with count (1 to ${FORK_COUNT_MAX}). They inherit the source's options and sessions.`,
      inputSchema: { sandbox, checkpoint, as: SandboxName, count: z.number().int().optional() },
      outputSchema: out.object({ sandboxes: z.array(SandboxOut), warnings }),
    },
    k.tool('sandbox_fork', async (a: { sandbox: string; checkpoint: string; as: string; count?: number }) => {
      // Every name the fork would make (a count out of range is refused by the service, naming the range).
      const n = a.count === undefined ? 0 : Math.min(Math.max(a.count, 0), FORK_COUNT_MAX);
      const names = a.count === undefined ? [a.as] : Array.from({ length: n }, (_, i) => `${a.as}-${i + 1}`);
      for (const name of names)
        if (!k.guard.mayUse(name))
          throw new SandboxDeskError('refused', `fork name ${name} is outside this agent's sandbox scope`, {
            hint: 'ask for a token whose scope includes the new names, or fork from the app',
          });
      return done(await desk.checkpoints.fork({ sandbox: a.sandbox, checkpoint: a.checkpoint, as: a.as, count: a.count }));
    }),
  );

  for (const verb of ['pause', 'resume'] as const) {
    server.registerTool(
      `sandbox_${verb}`,
      {
        description: verb === 'pause' ? 'Freeze every process of a sandbox (commands are refused until resume).' : 'Thaw a paused sandbox.',
        inputSchema: { sandbox },
        outputSchema: SandboxOut,
      },
      k.tool(`sandbox_${verb}`, async (a: { sandbox: string }) =>
        done(verb === 'pause' ? await desk.checkpoints.pause(a.sandbox) : await desk.checkpoints.resume(a.sandbox)),
      ),
    );
  }
}
