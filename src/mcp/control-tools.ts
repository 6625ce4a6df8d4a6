import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { SandboxName } from '../api/contract.js';
import type { SandboxDesk } from '../api/sandbox-desk.js';
import { CONTROL_WAIT_DEFAULT_MS, CONTROL_WAIT_MAX_MS } from '../desktop/control-wait.js';
import { DURATION_ARG_FORMS, parseDurationArg } from '../shared/time-arg.js';
import type { CheckpointToolKit } from './checkpoint-tools.js';
import { out, structured } from './tool-output.js';

/**
 * The lease seen from the agent's side (issue 36, item 4): instead of polling human_has_control errors,
 * the agent waits until the person gives control back. Waiting reads the lease only: it takes nothing
 * from the person, so a scoped agent token may call it like a screenshot.
 */
export function registerControlTools(server: McpServer, desk: SandboxDesk, k: CheckpointToolKit): void {
  server.registerTool(
    'wait_for_control',
    {
      description: `Wait until the agent may act on the sandbox's desktop — until a person who took control gives it back — at most timeout (default ${CONTROL_WAIT_DEFAULT_MS / 1000}s, at most ${CONTROL_WAIT_MAX_MS / 60_000}m; keep it under your MCP client's request timeout and call again to wait longer). Returns at once when nobody holds control. A timeout is an answer, not an error: {mayAct: false, timedOut: true, holder: "human"}. Screenshots and waits for the screen work meanwhile; clicks, typing and keys are refused with human_has_control.`,
      inputSchema: {
        sandbox: SandboxName.describe('the sandbox name (see sandbox_list)'),
        // A string, as the CLI's --timeout: checked by the handler, whose error says what it takes.
        timeout: z.string().min(1).optional().describe(`how long to wait at most: ${DURATION_ARG_FORMS}, e.g. "20s", "2m"`),
      },
      outputSchema: out.object({
        sandbox: z.string(),
        mayAct: z.boolean().describe('true: actions will not be refused with human_has_control now'),
        holder: z.enum(['agent', 'human']).describe('who holds control now'),
        viewerId: z.string().nullable().describe("the person's viewer while a person holds control"),
        waitedMs: z.number().int(),
        timedOut: z.boolean().describe('true: the timeout passed with the person still in control'),
        reason: z.string().nullable(),
      }),
    },
    k.tool('wait_for_control', async (a: { sandbox: string; timeout?: string }) => {
      const ms = a.timeout === undefined ? CONTROL_WAIT_DEFAULT_MS : parseDurationArg(a.timeout, 'timeout', CONTROL_WAIT_MAX_MS);
      return { result: structured(await desk.desktop.waitForControl(a.sandbox, ms)), receipt: {} };
    }),
  );
}
