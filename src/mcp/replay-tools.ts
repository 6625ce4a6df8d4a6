import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { SandboxName } from '../api/contract.js';
import type { SandboxDesk } from '../api/sandbox-desk.js';
import type { ReplayEvent } from '../shared/replay-types.js';
import { parseTimeArg, TIME_ARG_FORMS } from '../shared/time-arg.js';
import type { CheckpointToolKit } from './checkpoint-tools.js';
import { out, structured } from './tool-output.js';

const MIME = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' } as const;

/** A replay event with the frame an agent can fetch for it (replay_frame at `frame.at`), when the screen was recorded then. */
export type ReplayEventWithFrame = ReplayEvent & { frame: { at: string } | null };

export function withFrames(events: ReplayEvent[], screen: { startedAt: string; endedAt: string } | null): ReplayEventWithFrame[] {
  return events.map((e) => {
    const at = e.frameAt ?? e.at;
    const covered = screen !== null && at >= screen.startedAt && at <= screen.endedAt;
    return { ...e, frame: covered ? { at } : null };
  });
}

/**
 * The replay tools (issue 16): an agent — or a reviewer agent — reads what happened in a sandbox
 * (calls with the cwd each used and observed, commands, desktop actions, lease changes, checkpoints)
 * and fetches the recorded screen at any of those times as an image. The scope holds: the call
 * wrapper checks `sandbox` before anything runs.
 */
export function registerReplayTools(server: McpServer, desk: SandboxDesk, k: CheckpointToolKit): void {
  const sandbox = SandboxName.describe('the sandbox name (see sandbox_list)');
  // Checked by the handler (parseTimeArg), as the CLI's --since is: its error says what it takes.
  const time = (what: string) => z.string().min(1).describe(`${what}: ${TIME_ARG_FORMS}`);
  const optionalTime = (value: string | undefined, what: string) => (value === undefined ? undefined : parseTimeArg(value, what));

  server.registerTool(
    'replay_events',
    {
      description:
        "What happened in a sandbox, oldest first, on the recording's clock: agent calls (tool, cwdUsed, cwdObserved, exitCode, warnings, error), shell commands with their text and cwd, desktop actions (point, frameId, frameAt), lease changes, checkpoints. Each event has frame: {at} when the screen was recorded then — fetch it with replay_frame.",
      inputSchema: { sandbox, since: time('from this time on').optional(), until: time('up to this time').optional() },
      outputSchema: out.object({
        sandbox: z.string(),
        startedAt: z.string().nullable(),
        endedAt: z.string().nullable(),
        events: z.array(
          out.object({
            at: z.string(),
            kind: z.string().describe('agentCall, command, action, lease, checkpoint, restore, fork, network, recording …'),
            summary: z.string(),
            frame: out.object({ at: z.string() }).nullable().describe('fetch the screen then with replay_frame at frame.at'),
          }),
        ),
      }),
    },
    k.tool('replay_events', async (a: { sandbox: string; since?: string; until?: string }) => {
      const r = desk.replay.events(a.sandbox, { since: optionalTime(a.since, 'since'), until: optionalTime(a.until, 'until') });
      const screen = desk.replay.list(a.sandbox)[0]?.screen ?? null;
      return { result: structured({ ...r, events: withFrames(r.events, screen) }), receipt: {} };
    }),
  );

  server.registerTool(
    'replay_frame',
    {
      description:
        'The recorded screen of a sandbox at a time (the last update at or before it), as an image, plus {at, width, height, scale}. Times outside the recording are refused with its span.',
      inputSchema: {
        sandbox,
        at: time('at'),
        maxWidth: z.number().int().min(16).max(8192).optional().describe('scale the image to at most this width'),
      },
      outputSchema: out.object({
        sandbox: z.string(),
        askedAt: z.string().describe('the time asked for'),
        at: z.string().describe('the time of the update the image shows'),
        width: z.number().int(),
        height: z.number().int(),
        scale: z.number(),
        format: z.enum(['png', 'jpeg', 'webp']),
      }),
    },
    k.tool('replay_frame', async (a: { sandbox: string; at: string; maxWidth?: number }) => {
      const f = await desk.replay.frame({ sandbox: a.sandbox, at: parseTimeArg(a.at, 'at'), maxWidth: a.maxWidth });
      const { data, ...meta } = f;
      return { result: structured(meta, { data, mimeType: MIME[f.format] }), receipt: {} };
    }),
  );
}
