import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/**
 * What every MCP tool answers on success: its typed result as `structuredContent` (checked by the SDK
 * against the tool's declared `outputSchema`) and the same JSON as text, for clients that read only
 * text (the spec's backwards-compatible form). An image, when the tool has one, comes first.
 *
 * Errors stay `isError: true` with `{"error":{code,message,hint}}` as text and no structuredContent:
 * an error does not have the success shape, and the official SDK's client validates any
 * structuredContent it gets against the outputSchema — errors included.
 */
export function structured(value: object, image?: { data: string; mimeType: string }): CallToolResult {
  const structuredContent = value as Record<string, unknown>;
  const text = { type: 'text' as const, text: JSON.stringify(value, null, 2) };
  return {
    content: image ? [{ type: 'image', data: image.data, mimeType: image.mimeType }, text] : [text],
    structuredContent,
  };
}

/**
 * The output schemas share these parts. Objects are loose (`additionalProperties` open): they name
 * and type the fields an agent relies on, and a field added to a result later (another backend's
 * detail, a new exec flag) does not make a conforming answer fail a client's validation.
 */
export const out = {
  object: <S extends z.ZodRawShape>(shape: S) => z.looseObject(shape),
  warning: z.looseObject({ code: z.string(), message: z.string() }).describe('a warning: code and what happened'),
  point: z.looseObject({ x: z.number(), y: z.number() }),
};

export const SandboxOut = out.object({
  name: z.string(),
  backend: z.string(),
  state: z.string().describe('running, stopped, paused, missing …'),
  image: z.string().nullable(),
  user: z.string().nullable(),
  declaredDefaultCwd: z.string().describe('as declared: an absolute path or "~"'),
  defaultCwd: z.string().nullable().describe('the declared default with "~" resolved; null until connected'),
  home: z.string().nullable(),
  tempDir: z.string().nullable(),
});

export const SessionOut = out.object({
  key: z.string(),
  parent: z.string().nullable(),
  cwd: z.string().nullable().describe("the session's own cwd record"),
  createdAt: z.string(),
  lastWarnings: z.array(out.warning),
});

export const CheckpointOut = out.object({
  id: z.string(),
  sandbox: z.string(),
  backend: z.string(),
  label: z.string().nullable(),
  createdAt: z.string(),
  sizeBytes: z.number().nullable(),
  memory: z.boolean(),
  broken: z.boolean(),
  brokenDetail: z.string().nullable(),
  sessions: z.array(out.object({ key: z.string(), cwd: z.string().nullable() })),
});

/** A frame of the live screen: the coordinates later actions use. */
export const FrameOut = out.object({
  frameId: z.string(),
  width: z.number().int().describe('the image width in pixels'),
  height: z.number().int(),
  scale: z.number().describe('frame width / screen width (1 unless scaled down)'),
  screenWidth: z.number().int(),
  screenHeight: z.number().int(),
  takenAt: z.string(),
  format: z.enum(['png', 'jpeg', 'webp']),
  firstSinceChange: z.boolean(),
});

export const ActionOut = out.object({
  pointer: out.point.describe('where the pointer is after the action (screen pixels), measured'),
  pointerInFrame: out.point.optional().describe('the same in the coordinates of the frame named'),
  frameId: z.string().optional(),
  via: z.enum(['rfb', 'xdotool']),
  note: z.string().optional(),
  target: out.point.optional(),
});
