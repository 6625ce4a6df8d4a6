// Over 400 lines: one registration per MCP tool (description, schema, handler), a flat table an agent's
// tool list mirrors; each entry is short, and splitting them by file would scatter that list. Policy,
// limits and the transports are modules of their own beside it.
import { registerReplayTools } from './replay-tools.js';
import { registerControlTools } from './control-tools.js';
import { registerPoolTools } from './pool-tools.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { AllowEntry, LogRequest, SandboxName, SessionKey } from '../api/contract.js';
import { APP_LOG_SOURCE } from '../api/log-service.js';
import type { SandboxDesk } from '../api/sandbox-desk.js';
import type { AgentPolicy, AgentScope } from '../shared/agent-scope.js';
import { asSandboxDeskError, SandboxDeskError } from '../shared/errors.js';
import type { ExecWarning } from '../shared/exec-result.js';
import { fitAnswer } from '../exec/output-fit.js';
import { AgentGuard } from './agent-policy.js';
import { registerCheckpointTools } from './checkpoint-tools.js';
import {
  ENVELOPE_BYTES,
  FILE_CHUNK_MAX_BYTES,
  FILE_READ_DEFAULT_BYTES,
  FILE_READ_MAX_BYTES,
  MCP_MESSAGE_MAX_BYTES,
  describeBytes,
} from './mcp-limits.js';
import type { Frame, ScreenAction } from '../desktop/desktop-service.js';
import { MIME } from '../desktop/screen/frame-encode.js';
import { MAX_TYPE_CHARS } from '../desktop/screen/keysyms.js';
import { ActionOut, FrameOut, SandboxOut, SessionOut, out, structured } from './tool-output.js';

export interface McpOptions {
  /**
   * Step ownership that applies to every call of this server: a workflow runner starts the bridge with
   * RUNLOOP_STEP_ID or STEP_OUTPUT_DIR in its environment. Such calls fail closed without a cwd.
   */
  stepFromEnv?: string | undefined;
  version?: string;
  /** The agent's scope (its token's; stdio: every sandbox). */
  scope?: AgentScope | undefined;
  /** The app's agent policy (config `agents.allowOtherUsers`); default: the sandbox user only. */
  policy?: AgentPolicy | undefined;
}

/** What a call left for the log (a receipt of what happened, not an inference). */
interface Receipt {
  sandbox?: string | null;
  session?: string | null;
  cwdUsed?: string | null;
  cwdObserved?: string | null;
  exitCode?: number | null;
  warnings?: ExecWarning[];
}

/**
 * A chunk as text when it is valid UTF-8 and its escaped forms still fit one message, else as base64,
 * which always fits (FILE_READ_MAX_BYTES is sized for it). The answer carries the content twice: in
 * the text, escaped twice (control characters grow sixfold), and in structuredContent, escaped once.
 */
export function encodeChunk(bytes: Buffer): { encoding: 'utf8' | 'base64'; content: string } {
  try {
    const content = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    const once = JSON.stringify(content);
    if (Buffer.byteLength(JSON.stringify(once)) + Buffer.byteLength(once) <= MCP_MESSAGE_MAX_BYTES - ENVELOPE_BYTES)
      return { encoding: 'utf8', content };
  } catch {
    // not UTF-8 (or a character split at the chunk's edge)
  }
  return { encoding: 'base64', content: bytes.toString('base64') };
}

/** Reads step ownership markers the way workflow runners pass them. */
export function stepFromEnvironment(env: NodeJS.ProcessEnv): string | undefined {
  if (env.RUNLOOP_STEP_ID) return env.RUNLOOP_STEP_ID;
  if (env.STEP_OUTPUT_DIR) return `output:${env.STEP_OUTPUT_DIR}`;
  return undefined;
}

/**
 * The agent bridge: Sandbox Desk as MCP tools. Every tool validates its arguments by its schema,
 * answers errors as data (`isError` with `{"error":{code,message,hint}}`), and leaves a line in the
 * call log. Relative paths and commands anchor at the *session's* cwd — the same place its shell is.
 */
export function createMcpServer(desk: SandboxDesk, opts: McpOptions = {}): McpServer {
  const server = new McpServer({ name: 'sandbox-desk', version: opts.version ?? '0.1.0' });
  const stepOf = (stepId: string | undefined) => stepId ?? opts.stepFromEnv;
  const guard = new AgentGuard(opts.scope, opts.policy);
  // An MCP server lives as long as the agent's run: it records the desktops it drives (issue 16).
  desk.desktop.recordRunningDesktops();

  /** Runs a tool, turns errors into data, and logs the call. */
  const tool = <A extends Record<string, unknown>>(
    name: string,
    fn: (args: A) => Promise<{ result: CallToolResult; receipt: Receipt }>,
  ) => {
    return async (args: A): Promise<CallToolResult> => {
      const t0 = performance.now();
      const at = new Date().toISOString();
      const base = {
        sandbox: typeof args.sandbox === 'string' ? args.sandbox : null,
        session: typeof args.session === 'string' ? args.session : null,
      };
      try {
        // The scope holds for every tool that names a sandbox, before anything runs.
        if (typeof args.sandbox === 'string') guard.checkSandbox(args.sandbox);
        const { result, receipt } = await fn(args);
        desk.store.callLog.append({
          at,
          tool: name,
          sandbox: receipt.sandbox ?? base.sandbox,
          session: receipt.session ?? base.session,
          cwdUsed: receipt.cwdUsed ?? null,
          cwdObserved: receipt.cwdObserved ?? null,
          exitCode: receipt.exitCode ?? null,
          warnings: receipt.warnings ?? [],
          error: null,
          durationMs: Math.round(performance.now() - t0),
        });
        return result;
      } catch (err) {
        const e = asSandboxDeskError(err);
        desk.store.callLog.append({
          at,
          tool: name,
          ...base,
          cwdUsed: null,
          cwdObserved: null,
          exitCode: null,
          warnings: [],
          error: `${e.code}: ${e.message}`,
          durationMs: Math.round(performance.now() - t0),
        });
        return { isError: true, content: [{ type: 'text', text: JSON.stringify({ error: e.toJSON() }) }] };
      }
    };
  };

  const outputCut = out.object({ keptBytes: z.number().int(), totalBytes: z.number().int() });
  // A tool without arguments says so: strict-mode clients (the OpenAI Agents SDK) refuse an open object.
  const noArgs = z.object({}).strict();
  const sandbox = SandboxName.describe('the sandbox name (see sandbox_list)');
  const session = SessionKey.optional().describe(
    'the session whose cwd this call uses and updates (default "default"); one per agent or task',
  );
  const stepId = z
    .string()
    .min(1)
    .optional()
    .describe(
      'workflow-step ownership: without a resolvable cwd the call is refused (cwd_unresolved) instead of running in the sandbox default',
    );

  server.registerTool(
    'image_list',
    {
      description:
        'List the images sandboxes can be created from: Docker images the app made or uses and VM images, with kind, ref (what --image takes), size, users (sandboxes in your scope) and whether the bot desktop (Xvnc, Xfce, Chromium) is in it (desktop: true/false, null when unknown).',
      inputSchema: noArgs,
      outputSchema: out.object({
        images: z.array(
          out.object({
            kind: z.string(),
            ref: z.string().describe('what a sandbox create takes as its image'),
            sizeBytes: z.number(),
            usedBy: z.array(z.string()),
            desktop: z.boolean().nullable(),
          }),
        ),
        warnings: z.array(z.string()).describe('what could not be listed and why'),
      }),
    },
    tool('image_list', async () => {
      const listing = await desk.images.list();
      const images = listing.images.map((i) => ({ ...i, usedBy: i.usedBy.filter((n) => guard.mayUse(n)) }));
      return { result: structured({ images, warnings: listing.warnings }), receipt: {} };
    }),
  );

  server.registerTool(
    'sandbox_list',
    {
      description: 'List the sandboxes: {sandboxes: [{name, backend, state, image, declared default cwd, home, …}]}.',
      inputSchema: noArgs,
      outputSchema: out.object({ sandboxes: z.array(SandboxOut) }),
    },
    tool('sandbox_list', async () => ({
      result: structured({ sandboxes: (await desk.listSandboxes()).filter((s) => guard.mayUse(s.name)) }),
      receipt: {},
    })),
  );

  server.registerTool(
    'sandbox_inspect',
    {
      description: 'One sandbox: its home, default cwd, temp dir, and every session with its own cwd record.',
      inputSchema: { sandbox },
      outputSchema: SandboxOut.extend({ sessions: z.array(SessionOut) }),
    },
    tool('sandbox_inspect', async (a: { sandbox: string }) => ({
      result: structured({ ...(await desk.inspectSandbox(a.sandbox)), sessions: desk.listSessions(a.sandbox) }),
      receipt: {},
    })),
  );

  server.registerTool(
    'sandbox_logs',
    {
      description:
        "Read a sandbox's log: the container's output or the VM's serial console (default), a virtiofsd log, or the desktop's (desktop, desktop-xvnc, desktop-xfce, desktop-chromium). Without `source` it also lists the sources and whether each exists. Returns the last `tail` lines (default 200).",
      inputSchema: {
        sandbox,
        source: LogRequest.shape.source.describe('the log id (see the sources this tool lists)'),
        tail: LogRequest.shape.tail.describe('how many of the last lines (default 200, at most 10000)'),
      },
      outputSchema: out.object({
        sandbox: z.string(),
        source: z.string(),
        text: z.string().describe('the last lines'),
        tail: z.number().int(),
        sources: z
          .array(out.object({ id: z.string(), kind: z.string(), exists: z.boolean(), detail: z.string().nullable() }))
          .optional()
          .describe('without `source`: every log source of the sandbox'),
      }),
    },
    tool('sandbox_logs', async (a: { sandbox: string; source?: string; tail?: number }) => {
      // The app's own log spans every sandbox and every client: not for an agent, whatever its scope.
      if (a.source === APP_LOG_SOURCE) {
        throw new SandboxDeskError('refused', "the app's own log is not available to agents (it covers every sandbox)", {
          hint: 'read a backend or desktop log of this sandbox instead',
        });
      }
      const sources = (await desk.logs.sources(a.sandbox)).filter((s) => s.kind !== 'app');
      const source = a.source ?? sources.find((s) => s.exists)?.id;
      if (source === undefined) {
        throw new SandboxDeskError('not_found', `sandbox ${a.sandbox} has no logs yet`, {
          hint: sources.map((s) => `${s.id}: ${s.detail}`).join('; '),
        });
      }
      const log = await desk.logs.read(a.sandbox, source, a.tail);
      return { result: structured(a.source ? log : { ...log, sources }), receipt: {} };
    }),
  );

  server.registerTool(
    'sandbox_network',
    {
      description:
        "A sandbox's network policy (mode open/offline/allow and the allow list) and its newest connections (allowed and denied, from the egress proxy). An agent may only tighten it — deny entries, or mode offline — never widen it: allowing a host or opening the network is for a person (`sandbox-desk sandbox network NAME --allow HOST`).",
      inputSchema: {
        sandbox,
        deny: z.array(AllowEntry).max(100).optional().describe('take these entries off the allow list'),
        mode: z.enum(['offline']).optional().describe('offline: cut the sandbox off the network entirely'),
        logLimit: z.number().int().min(0).max(1000).optional().describe('how many of the newest connections to return (default 50)'),
      },
      outputSchema: out.object({
        policy: out.object({ mode: z.enum(['open', 'offline', 'allow']), allow: z.array(z.string()) }),
        // The egress log's lines as the pump wrote them (read back unvalidated): typed, none required but the decision.
        connections: z.array(
          out.object({
            at: z.string().optional(),
            host: z.string().optional(),
            port: z.number().optional(),
            verdict: z.string().describe('allowed or denied'),
            reason: z.string().nullable().optional().describe('why it was denied'),
            process: z.string().nullable().optional().describe('the process inside the sandbox that connected, when known'),
          }),
        ),
      }),
    },
    tool('sandbox_network', async (a: { sandbox: string; deny?: string[]; mode?: 'offline'; logLimit?: number }) => {
      const policy =
        a.deny?.length || a.mode
          ? await desk.sandboxNetwork(a.sandbox, { deny: a.deny, mode: a.mode })
          : await desk.sandboxNetwork(a.sandbox);
      const limit = a.logLimit ?? 50;
      return { result: structured({ policy, connections: limit > 0 ? desk.network.log(a.sandbox, limit) : [] }), receipt: {} };
    }),
  );

  server.registerTool(
    'execute_shell_command',
    {
      description:
        "Run a bash command in a sandbox, in the session's cwd (or workingDirectory for this command only). Returns exit code, output (stdout/stderr as text, or as base64 of the exact bytes when they are not UTF-8: see encoding.stdout/encoding.stderr), and the cwd measured when it ended (cwdObserved false when it was killed or timed out — then nothing moved). A `cd` persists in the session.",
      inputSchema: {
        sandbox,
        command: z.string().min(1),
        session,
        parentSession: SessionKey.optional().describe("when the session is new: create it as a child starting in this session's cwd"),
        workingDirectory: z.string().optional().describe('run this command there (relative: against the session cwd)'),
        stepId,
        timeoutSeconds: z.number().positive().max(86400).optional(),
        user: z
          .string()
          .min(1)
          .optional()
          .describe("run as this user: only the sandbox's own unless the app's config allows others (agents.allowOtherUsers)"),
      },
      outputSchema: out.object({
        exitCode: z.number(),
        stdout: z.string(),
        stderr: z.string(),
        encoding: out
          .object({ stdout: z.enum(['utf8', 'base64']), stderr: z.enum(['utf8', 'base64']) })
          .describe('how each stream is given: UTF-8 text, or base64 of the exact bytes when they are not UTF-8'),
        cwd: z.string().nullable().describe('the cwd measured when the command ended; null when not observed'),
        cwdObserved: z.boolean().describe('false when it was killed or timed out: then the session did not move'),
        warnings: z.array(out.warning),
        deniedCount: z.number().int().describe('stderr lines saying Permission denied / Operation not permitted'),
        timedOut: z.boolean(),
        truncated: out.object({ stdout: z.boolean(), stderr: z.boolean() }).describe('output beyond the kept bytes was dropped'),
        stdoutTruncated: outputCut.optional().describe('present when stdout was cut: bytes kept of bytes printed'),
        stderrTruncated: outputCut.optional().describe('present when stderr was cut: bytes kept of bytes printed'),
        queuedMs: z
          .number()
          .describe(
            "ms this call waited for the session's earlier commands (one runs at a time, in arrival order); counted in its timeout",
          ),
      }),
    },
    tool(
      'execute_shell_command',
      async (a: {
        sandbox: string;
        command: string;
        session?: string;
        parentSession?: string;
        workingDirectory?: string;
        stepId?: string;
        timeoutSeconds?: number;
        user?: string;
      }) => {
        const user = guard.checkUser(a.user, desk.store.sandboxes.get(a.sandbox)?.user ?? null);
        const r = await desk.exec({
          sandbox: a.sandbox,
          command: a.command,
          session: a.session,
          parent: a.parentSession,
          workdir: a.workingDirectory,
          stepId: stepOf(a.stepId),
          timeoutSeconds: a.timeoutSeconds,
          ...(user === undefined ? {} : { user }),
        });
        // The answer carries the output twice (the text for text-only clients, and structuredContent):
        // both copies are counted, and the output is cut so the whole message fits the transport.
        const result = fitAnswer(
          {
            exitCode: r.exitCode,
            stdout: r.stdout,
            stderr: r.stderr,
            encoding: r.encoding,
            cwd: r.cwd,
            cwdObserved: r.cwdObserved,
            warnings: r.warnings,
            deniedCount: r.deniedCount,
            timedOut: r.timedOut,
            truncated: r.truncated,
            stdoutTruncated: r.stdoutTruncated,
            stderrTruncated: r.stderrTruncated,
            queuedMs: r.queuedMs,
          },
          { stdout: r.stdoutBytes, stderr: r.stderrBytes },
          { maxBytes: MCP_MESSAGE_MAX_BYTES - ENVELOPE_BYTES, copies: 2, size: (x) => Buffer.byteLength(JSON.stringify(structured(x))) },
        );
        return {
          result: structured(result),
          receipt: { session: r.session, cwdUsed: r.startCwd, cwdObserved: r.cwd, exitCode: r.exitCode, warnings: r.warnings },
        };
      },
    ),
  );

  server.registerTool(
    'read_file',
    {
      description: `Read a file in a sandbox. A relative path is relative to the session's cwd (where its shell is). Text comes back as UTF-8, anything else (or a chunk that splits a character) as base64. Without offset: the whole file, refused above maxBytes (default ${describeBytes(FILE_READ_DEFAULT_BYTES)}). Larger files in chunks: offset 0, then each answer's nextOffset until it is null; maxBytes up to ${describeBytes(FILE_READ_MAX_BYTES)} per chunk.`,
      inputSchema: {
        sandbox,
        path: z.string().min(1),
        session,
        stepId,
        maxBytes: z
          .number()
          .int()
          .positive()
          .max(
            FILE_READ_MAX_BYTES,
            `maxBytes is at most ${describeBytes(FILE_READ_MAX_BYTES)} (the answer carries the content twice, as text and structuredContent, in one MCP message); read larger files in chunks with offset`,
          )
          .optional(),
        offset: z.number().int().min(0).optional().describe('read a chunk starting at this byte (answers carry size and nextOffset)'),
      },
      outputSchema: out.object({
        path: z.string().describe('the absolute path read'),
        size: z.number().int().describe("the file's size in bytes"),
        encoding: z.enum(['utf8', 'base64']),
        content: z.string(),
        offset: z.number().int().optional().describe('with offset: where this chunk starts'),
        bytes: z.number().int().optional().describe("with offset: this chunk's length in bytes"),
        nextOffset: z.number().int().nullable().optional().describe('with offset: the next chunk, null at the end'),
      }),
    },
    tool(
      'read_file',
      async (a: { sandbox: string; path: string; session?: string; stepId?: string; maxBytes?: number; offset?: number }) => {
        const maxBytes = a.maxBytes ?? FILE_READ_DEFAULT_BYTES;
        if (a.offset === undefined) {
          let r;
          try {
            r = await desk.io.readFile({ sandbox: a.sandbox, path: a.path, session: a.session, stepId: stepOf(a.stepId), maxBytes });
          } catch (err) {
            const e = asSandboxDeskError(err);
            if (/larger than the limit/.test(e.message))
              throw new SandboxDeskError(e.code, e.message, {
                hint: `read it in chunks: offset 0, then nextOffset, with maxBytes up to ${describeBytes(FILE_READ_MAX_BYTES)}`,
              });
            throw err;
          }
          const { encoding, content } = encodeChunk(r.bytes);
          return {
            result: structured({ path: r.path, size: r.bytes.length, encoding, content }),
            receipt: { session: r.session, cwdUsed: r.cwd },
          };
        }
        const r = await desk.io.readFileRange({
          sandbox: a.sandbox,
          path: a.path,
          session: a.session,
          stepId: stepOf(a.stepId),
          offset: a.offset,
          length: maxBytes,
        });
        const { encoding, content } = encodeChunk(r.bytes);
        const end = a.offset + r.bytes.length;
        return {
          result: structured({
            path: r.path,
            size: r.size,
            offset: a.offset,
            bytes: r.bytes.length,
            nextOffset: end < r.size ? end : null,
            encoding,
            content,
          }),
          receipt: { session: r.session, cwdUsed: r.cwd },
        };
      },
    ),
  );

  server.registerTool(
    'write_file',
    {
      description: `Write a file in a sandbox (created, or replaced whole: a write that fails leaves the old file as it was). A relative path is relative to the session's cwd. encoding "base64" for binary content. At most ${describeBytes(FILE_CHUNK_MAX_BYTES)} per call: write larger files in chunks, the first at offset 0 (replaces the file), each next one at offset = the bytes written so far (appends).`,
      inputSchema: {
        sandbox,
        path: z.string().min(1),
        content: z.string(),
        encoding: z.enum(['utf8', 'base64']).optional(),
        offset: z
          .number()
          .int()
          .min(0)
          .optional()
          .describe('0 (default) creates or replaces; N appends to a file that has exactly N bytes'),
        session,
        stepId,
      },
      outputSchema: out.object({
        path: z.string(),
        bytes: z.number().int().describe('bytes written by this call'),
        size: z.number().int().describe("the file's size after it"),
      }),
    },
    tool(
      'write_file',
      async (a: {
        sandbox: string;
        path: string;
        content: string;
        encoding?: 'utf8' | 'base64';
        offset?: number;
        session?: string;
        stepId?: string;
      }) => {
        const bytes = Buffer.from(a.content, a.encoding === 'base64' ? 'base64' : 'utf8');
        if (bytes.length > FILE_CHUNK_MAX_BYTES) {
          throw new SandboxDeskError(
            'invalid_input',
            `content is ${bytes.length} bytes, above the ${describeBytes(FILE_CHUNK_MAX_BYTES)} of one write_file`,
            { hint: 'write it in chunks: offset 0, then offset = bytes written so far' },
          );
        }
        const r = await desk.io.writeFile({
          sandbox: a.sandbox,
          path: a.path,
          content: bytes,
          session: a.session,
          stepId: stepOf(a.stepId),
          offset: a.offset ?? 0,
        });
        return {
          result: structured({ path: r.path, bytes: r.bytes, size: (a.offset ?? 0) + r.bytes }),
          receipt: { session: r.session, cwdUsed: r.cwd },
        };
      },
    ),
  );

  server.registerTool(
    'list_dir',
    {
      description: "List a directory in a sandbox (default: the session's cwd): name, type, size.",
      inputSchema: { sandbox, path: z.string().optional(), session, stepId },
      outputSchema: out.object({
        path: z.string(),
        entries: z.array(out.object({ name: z.string(), type: z.enum(['file', 'dir', 'link', 'other']), size: z.number() })),
      }),
    },
    tool('list_dir', async (a: { sandbox: string; path?: string; session?: string; stepId?: string }) => {
      const r = await desk.io.listDir({ sandbox: a.sandbox, path: a.path, session: a.session, stepId: stepOf(a.stepId) });
      return { result: structured({ path: r.path, entries: r.entries }), receipt: { session: r.session, cwdUsed: r.cwd } };
    }),
  );

  server.registerTool(
    'session_create',
    {
      description:
        "Create a session for a delegated agent or a workflow step. It receives its cwd now — the one given, or its parent's current one — and never looks the parent up later.",
      inputSchema: { sandbox, key: SessionKey, parent: SessionKey.optional(), cwd: z.string().startsWith('/').optional() },
      outputSchema: SessionOut,
    },
    tool('session_create', async (a: { sandbox: string; key: string; parent?: string; cwd?: string }) => {
      const s = desk.createSession({ sandbox: a.sandbox, key: a.key, parent: a.parent, cwd: a.cwd });
      return { result: structured(s), receipt: { session: s.key, cwdUsed: s.cwd } };
    }),
  );

  server.registerTool(
    'desktop_start',
    {
      description: "Start (or adopt) the sandbox's bot desktop: Xvnc + Xfce + Chromium inside the sandbox.",
      inputSchema: {
        sandbox,
        geometry: z
          .string()
          .regex(/^\d{3,4}x\d{3,4}$/)
          .optional(),
        record: z.boolean().optional().describe('false: do not record the screen for replay (default: recorded, config replay.record)'),
      },
      outputSchema: out.object({
        sandbox: z.string(),
        running: z.boolean(),
        placement: z.enum(['sandbox', 'host', 'refused']),
        display: z.string().nullable(),
        geometry: z.string().nullable().describe('e.g. 1280x800'),
        leaseHolder: z.string().describe('who may act on the screen now (agent or human)'),
        missing: z.array(z.string()).describe('programs the sandbox lacks for a desktop'),
        reason: z.string().nullable().describe('why the desktop cannot run here, when it cannot'),
        recording: out.object({ on: z.boolean(), bytes: z.number(), since: z.string().nullable(), warning: z.string().nullable() }),
      }),
    },
    tool('desktop_start', async (a: { sandbox: string; geometry?: string; record?: boolean }) => ({
      result: structured(
        await desk.desktop.start(a.sandbox, { geometry: a.geometry, ...(a.record !== undefined ? { record: a.record } : {}) }),
      ),
      receipt: {},
    })),
  );

  const maxSide = z.number().int().min(1).max(16384);
  const shotArgs = {
    maxWidth: maxSide
      .optional()
      .describe('scale the frame to at most this width (aspect kept; e.g. 1024 for XGA models); the frame says the exact scale'),
    maxHeight: maxSide.optional().describe('scale the frame to at most this height'),
    format: z.enum(['png', 'jpeg', 'webp']).optional().describe('image format (default png)'),
    quality: z.number().int().min(1).max(100).optional().describe('jpeg/webp quality (default 80)'),
  };
  type ShotArgs = { sandbox: string; maxWidth?: number; maxHeight?: number; format?: 'png' | 'jpeg' | 'webp'; quality?: number };
  /** An image and its frame: the frame (not the bytes) in the text and in structuredContent, for the coordinates of later actions. */
  const frameResult = (shot: { frame: Frame; image: Buffer }, extra: Record<string, unknown> = {}): CallToolResult =>
    structured({ ...extra, ...shot.frame }, { data: shot.image.toString('base64'), mimeType: MIME[shot.frame.format] });
  const shotOpts = (a: ShotArgs) => ({ maxWidth: a.maxWidth, maxHeight: a.maxHeight, format: a.format, quality: a.quality });

  server.registerTool(
    'screenshot',
    {
      description:
        "A frame of the desktop's live framebuffer: the image plus {frameId, width, height, scale, screenWidth, screenHeight, takenAt, format}. Pass the frameId to actions that use its coordinates; a frame from before a resize or a desktop restart is refused (stale_frame). Allowed while a human holds the control lease (read-only); actions meanwhile are refused (human_has_control).",
      inputSchema: { sandbox, ...shotArgs },
      outputSchema: FrameOut,
    },
    tool('screenshot', async (a: ShotArgs) => ({
      result: frameResult(await desk.desktop.screenshot(a.sandbox, shotOpts(a))),
      receipt: {},
    })),
  );

  const timeoutMs = z.number().int().min(1).max(120_000);
  server.registerTool(
    'wait_for_change',
    {
      description:
        'Wait until the screen paints (inside region, screen pixels, if given) or the timeout, instead of sleeping; returns {changed} and the frame it ended on.',
      inputSchema: {
        sandbox,
        region: z
          .object({
            x: z.number().int().min(0),
            y: z.number().int().min(0),
            width: z.number().int().min(1),
            height: z.number().int().min(1),
          })
          .optional(),
        timeoutMs,
        ...shotArgs,
      },
      outputSchema: FrameOut.extend({ changed: z.boolean().describe('false: the timeout passed with no paint') }),
    },
    tool(
      'wait_for_change',
      async (a: ShotArgs & { region?: { x: number; y: number; width: number; height: number }; timeoutMs: number }) => {
        const r = await desk.desktop.waitForChange(a.sandbox, { region: a.region, timeoutMs: a.timeoutMs, ...shotOpts(a) });
        return { result: frameResult(r, { changed: r.changed }), receipt: {} };
      },
    ),
  );
  server.registerTool(
    'wait_until_stable',
    {
      description:
        'Wait until nothing has painted for quietMs (a page finished loading or animating), or the timeout; returns {stable} and the frame it ended on.',
      inputSchema: {
        sandbox,
        quietMs: z.number().int().min(200).max(60_000).describe('at least 200: the screen is sampled every 100 ms'),
        timeoutMs,
        ...shotArgs,
      },
      outputSchema: FrameOut.extend({ stable: z.boolean().describe('false: the timeout passed while it still painted') }),
    },
    tool('wait_until_stable', async (a: ShotArgs & { quietMs: number; timeoutMs: number }) => {
      const r = await desk.desktop.waitUntilStable(a.sandbox, { quietMs: a.quietMs, timeoutMs: a.timeoutMs, ...shotOpts(a) });
      return { result: frameResult(r, { stable: r.stable }), receipt: {} };
    }),
  );

  const coord = z.number().int().min(0).max(16384);
  const frameId = z
    .string()
    .min(1)
    .max(100)
    .optional()
    .describe('the screenshot whose coordinates x/y are in (default: screen pixels); refused with stale_frame if the screen changed since');
  const button = z.union([z.literal(1), z.literal(2), z.literal(3)]).optional();
  const actingSession = SessionKey.optional().describe(
    'your session (default "default"): names you to the person watching the desktop and in the replay',
  );
  const act = (
    name: string,
    description: string,
    inputSchema: Record<string, z.ZodType>,
    toAction: (a: Record<string, unknown>) => ScreenAction,
  ) =>
    server.registerTool(
      name,
      {
        description: `${description} Sent over the live RFB connection; returns the pointer measured after it ({pointer, pointerInFrame}). Refused (human_has_control) while a human holds the control lease: wait_for_control waits until it is given back.`,
        inputSchema: { sandbox, frameId, session: actingSession, ...inputSchema },
        outputSchema: ActionOut,
      },
      tool(name, async (a: Record<string, unknown> & { sandbox: string; frameId?: string; session?: string }) => {
        // The session names the agent to the person watching (the window's control pill, a refused action) and in the replay.
        const session = a.session ?? 'default';
        const r = await desk.desktop.act(a.sandbox, toAction(a), { frameId: a.frameId, session });
        return { result: structured(r), receipt: { session } };
      }),
    );
  act('click', 'Click at a position.', { x: coord, y: coord, button, double: z.boolean().optional() }, (a) => ({
    kind: 'click',
    x: a.x as number,
    y: a.y as number,
    button: a.button as 1 | 2 | 3 | undefined,
    double: a.double as boolean | undefined,
  }));
  act('move', 'Move the pointer.', { x: coord, y: coord }, (a) => ({ kind: 'move', x: a.x as number, y: a.y as number }));
  act('drag', 'Drag with a button held from (x, y) to (toX, toY).', { x: coord, y: coord, toX: coord, toY: coord, button }, (a) => ({
    kind: 'drag',
    x: a.x as number,
    y: a.y as number,
    toX: a.toX as number,
    toY: a.toY as number,
    button: a.button as 1 | 2 | 3 | undefined,
  }));
  act(
    'type',
    `Type any Unicode text (as keysyms), at most ${MAX_TYPE_CHARS} characters.`,
    {
      text: z
        .string()
        .min(1)
        .max(MAX_TYPE_CHARS * 2),
    },
    (a) => ({ kind: 'type', text: a.text as string }),
  );
  act('key', 'Press keys, e.g. "ctrl+l", "Return", "shift+Tab", "ctrl+shift+t Return".', { keys: z.string().min(1).max(1000) }, (a) => ({
    kind: 'key',
    keys: a.keys as string,
  }));
  act(
    'scroll',
    'Scroll at a position.',
    { x: coord, y: coord, direction: z.enum(['up', 'down', 'left', 'right']), amount: z.number().int().min(1).max(100).optional() },
    (a) => ({
      kind: 'scroll',
      x: a.x as number,
      y: a.y as number,
      direction: a.direction as 'up' | 'down' | 'left' | 'right',
      amount: a.amount as number | undefined,
    }),
  );

  server.registerTool(
    'browser_endpoint',
    {
      description:
        "The DevTools endpoint of the desktop's Chromium, forwarded to this machine's loopback: connect with Playwright/Puppeteer (connectOverCDP).",
      inputSchema: { sandbox },
      outputSchema: out.object({
        httpUrl: z.string().describe('http://127.0.0.1:PORT (connectOverCDP takes it)'),
        webSocketDebuggerUrl: z.string(),
        localPort: z.number().int(),
      }),
    },
    tool('browser_endpoint', async (a: { sandbox: string }) => ({
      result: structured(await desk.desktop.browserEndpoint(a.sandbox)),
      receipt: {},
    })),
  );

  registerCheckpointTools(server, desk, { tool, guard });
  registerReplayTools(server, desk, { tool, guard });
  registerControlTools(server, desk, { tool, guard });
  registerPoolTools(server, desk, { tool, guard });

  return server;
}
