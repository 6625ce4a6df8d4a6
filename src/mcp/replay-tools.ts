import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { SandboxName } from '../api/contract.js';
import type { SandboxDesk } from '../api/sandbox-desk.js';
import type { ReplayEvent } from '../shared/replay-types.js';
import type { CheckpointToolKit } from './checkpoint-tools.js';

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
  const time = (what: string) =>
    z
      .string()
      .refine((t) => !Number.isNaN(Date.parse(t)), `${what} is not a time; give ISO 8601`)
      .describe(`${what}: an ISO 8601 time, e.g. 2026-01-02T03:04:05Z`);

  server.registerTool(
    'replay_events',
    {
      description:
        "What happened in a sandbox, oldest first, on the recording's clock: agent calls (tool, cwdUsed, cwdObserved, exitCode, warnings, error), shell commands with their text and cwd, desktop actions (point, frameId, frameAt), lease changes, checkpoints. Each event has frame: {at} when the screen was recorded then — fetch it with replay_frame.",
      inputSchema: { sandbox, since: time('since').optional() },
    },
    k.tool('replay_events', async (a: { sandbox: string; since?: string }) => {
      const r = desk.replay.events(a.sandbox, { since: a.since });
      const screen = desk.replay.list(a.sandbox)[0]?.screen ?? null;
      const data = { ...r, events: withFrames(r.events, screen) };
      const result: CallToolResult = { ...k.text(data), structuredContent: data };
      return { result, receipt: {} };
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
    },
    k.tool('replay_frame', async (a: { sandbox: string; at: string; maxWidth?: number }) => {
      const f = await desk.replay.frame({ sandbox: a.sandbox, at: a.at, maxWidth: a.maxWidth });
      const { data, ...meta } = f;
      const result: CallToolResult = {
        content: [
          { type: 'image', data, mimeType: MIME[f.format] },
          { type: 'text', text: JSON.stringify(meta) },
        ],
        structuredContent: meta,
      };
      return { result, receipt: {} };
    }),
  );
}
