/**
 * The agent bridge with the SDK's own MCP Client (not a hand-rolled one): over stdio against
 * `sandbox-desk mcp`, and over streamable HTTP against `sandbox-desk serve --mcp`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { MCPServerStdio, mcpToFunctionTool, RunContext } from '@openai/agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxDesk } from '../../src/api/sandbox-desk.js';
import { decodePngSize } from '../../src/desktop/png-encode.js';
import { uniqueName } from './helpers.js';

const BIN = resolve(import.meta.dirname, '../../bin/sandbox-desk.js');

type ToolResult = { isError?: boolean; content: { type: string; text?: string; data?: string; mimeType?: string }[] };
// Each tool answers with its own shape; the assertions are what check it.

const json = (r: ToolResult) => JSON.parse(r.content[0]!.text!) as Record<string, any>;

async function stdioClient(home: string, extraEnv: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'sandbox-desk-test', version: '1.0.0' });
  const env = { ...(process.env as Record<string, string>), SANDBOX_DESK_HOME: home, ...extraEnv };
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env, stderr: 'pipe' }));
  return client;
}

describe('MCP agent bridge', () => {
  let home: string;
  let desk: SandboxDesk;
  let client: Client;
  const sb = uniqueName('mcp');
  const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as ToolResult;

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'sdesk-mcp-'));
    desk = new SandboxDesk({ dataDir: home });
    await desk.createSandbox({ name: sb, backend: 'docker', image: 'sandbox-desk/desktop:latest' });
    client = await stdioClient(home);
  }, 120_000);
  afterAll(async () => {
    await client?.close();
    for (const s of desk.store.sandboxes.list()) await desk.removeSandbox(s.name, { force: true }).catch(() => undefined);
    await desk.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('lists its tools, each with a JSON schema', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const n of [
      'sandbox_list',
      'image_list',
      'sandbox_inspect',
      'sandbox_logs',
      'execute_shell_command',
      'read_file',
      'write_file',
      'list_dir',
      'session_create',
      'desktop_start',
      'screenshot',
      'wait_for_change',
      'wait_until_stable',
      'click',
      'move',
      'drag',
      'type',
      'key',
      'scroll',
      'browser_endpoint',
      'sandbox_checkpoint',
      'checkpoint_list',
      'sandbox_restore',
      'sandbox_fork',
      'sandbox_pause',
      'sandbox_resume',
      'replay_events',
      'replay_frame',
      'wait_for_control',
      'pool_list',
    ]) {
      expect(names).toContain(n);
    }
    // Warm pools are off by default (issue 37): the real bridge's pool_list says so, with the budget.
    const pools = (await client.callTool({ name: 'pool_list', arguments: {} })) as ToolResult & { structuredContent?: unknown };
    expect(pools.structuredContent).toMatchObject({ memoryBudgetMiB: 2048, memoryMiB: 0, pools: [] });
    expect(tools.find((t) => t.name === 'execute_shell_command')!.inputSchema.required).toEqual(
      expect.arrayContaining(['sandbox', 'command']),
    );
  });

  it('runs commands in two sessions that keep different cwds', async () => {
    await call('execute_shell_command', { sandbox: sb, command: 'mkdir -p /tmp/a /tmp/b' });
    expect(json(await call('execute_shell_command', { sandbox: sb, session: 'agent-a', command: 'cd /tmp/a' }))).toMatchObject({
      cwd: '/tmp/a',
      cwdObserved: true,
    });
    expect(json(await call('execute_shell_command', { sandbox: sb, session: 'agent-b', command: 'cd /tmp/b' }))).toMatchObject({
      cwd: '/tmp/b',
    });
    expect(json(await call('execute_shell_command', { sandbox: sb, session: 'agent-a', command: 'pwd' }))).toMatchObject({
      stdout: '/tmp/a\n',
      exitCode: 0,
      deniedCount: 0,
    });
    expect(json(await call('execute_shell_command', { sandbox: sb, session: 'agent-b', command: 'pwd' })).stdout).toBe('/tmp/b\n');
    const inspected = json(await call('sandbox_inspect', { sandbox: sb }));
    expect(inspected.home).toBe('/home/agent');
    expect((inspected.sessions as { key: string; cwd: string }[]).map((s) => [s.key, s.cwd])).toEqual(
      expect.arrayContaining([
        ['agent-a', '/tmp/a'],
        ['agent-b', '/tmp/b'],
      ]),
    );
  });

  it("reads a sandbox's logs, lists the sources, and never hands out the app's own log", async () => {
    // On the container's own output (PID 1's), as root: not something an agent may do.
    await desk.exec({ sandbox: sb, command: 'echo mcp-log-marker > /proc/1/fd/1', user: 'root', mode: 'oneshot' });
    const r = json(await call('sandbox_logs', { sandbox: sb, tail: 5 }));
    expect(r.source).toBe('container');
    expect(r.text).toContain('mcp-log-marker');
    expect((r.sources as { id: string }[]).map((s) => s.id)).toContain('container');
    expect((r.sources as { id: string }[]).map((s) => s.id)).not.toContain('app');
    const app = await call('sandbox_logs', { sandbox: sb, source: 'app' });
    expect(app.isError).toBe(true);
    expect(json(app).error.code).toBe('refused');
    const nope = await call('sandbox_logs', { sandbox: sb, source: 'nope' });
    expect(json(nope).error).toMatchObject({ code: 'not_found', message: `sandbox ${sb} has no log source "nope"` });
  });

  it('a step-owned call without a cwd is refused before anything runs', async () => {
    const r = await call('execute_shell_command', {
      sandbox: sb,
      session: 'step-x',
      stepId: 'wf-1/step-x',
      command: 'touch /tmp/step-ran',
    });
    expect(r.isError).toBe(true);
    expect(json(r).error.code).toBe('cwd_unresolved');
    expect(
      json(await call('execute_shell_command', { sandbox: sb, command: 'test -e /tmp/step-ran && echo ran || echo nothing' })).stdout,
    ).toBe('nothing\n');
    // With a cwd given at its creation, the step runs there.
    await call('session_create', { sandbox: sb, key: 'step-y', cwd: '/tmp/b' });
    expect(
      json(await call('execute_shell_command', { sandbox: sb, session: 'step-y', stepId: 'wf-1/step-y', command: 'pwd' })).stdout,
    ).toBe('/tmp/b\n');
  });

  it("RUNLOOP_STEP_ID in the bridge's environment marks every call as step-owned", async () => {
    const stepClient = await stdioClient(home, { RUNLOOP_STEP_ID: 'run-7/step-2' });
    try {
      const r = (await stepClient.callTool({
        name: 'execute_shell_command',
        arguments: { sandbox: sb, session: 'fresh-step', command: 'true' },
      })) as ToolResult;
      expect(json(r).error.code).toBe('cwd_unresolved');
    } finally {
      await stepClient.close();
    }
  });

  it("read_file anchors a relative path at the session's cwd: after `cd /tmp/w`, notes.txt is /tmp/w/notes.txt", async () => {
    await call('execute_shell_command', {
      sandbox: sb,
      session: 'reader',
      command: 'mkdir -p /tmp/w && cd /tmp/w && printf "in w\\n" > notes.txt && printf "in home\\n" > ~/notes.txt',
    });
    const r = json(await call('read_file', { sandbox: sb, session: 'reader', path: 'notes.txt' }));
    expect(r).toMatchObject({ path: '/tmp/w/notes.txt', content: 'in w\n', encoding: 'utf8' });
    // Another session, another place.
    expect(json(await call('read_file', { sandbox: sb, session: 'someone-else', path: 'notes.txt' })).content).toBe('in home\n');
  });

  it("write_file and list_dir, binary-safe, in the session's cwd; errors say what was wrong", async () => {
    const bytes = Buffer.from([0, 1, 2, 255, 254, 10]);
    expect(
      json(
        await call('write_file', {
          sandbox: sb,
          session: 'reader',
          path: 'blob.bin',
          content: bytes.toString('base64'),
          encoding: 'base64',
        }),
      ),
    ).toMatchObject({ path: '/tmp/w/blob.bin', bytes: 6 });
    const back = json(await call('read_file', { sandbox: sb, session: 'reader', path: 'blob.bin' }));
    expect(back.encoding).toBe('base64');
    expect(Buffer.from(back.content as string, 'base64').equals(bytes)).toBe(true);
    const list = json(await call('list_dir', { sandbox: sb, session: 'reader' }));
    expect(list.path).toBe('/tmp/w');
    expect(list.entries).toEqual(
      expect.arrayContaining([
        { name: 'blob.bin', type: 'file', size: 6 },
        { name: 'notes.txt', type: 'file', size: 5 },
      ]),
    );
    const missing = await call('read_file', { sandbox: sb, session: 'reader', path: 'nope.txt' });
    expect(missing.isError).toBe(true);
    expect(json(missing).error).toMatchObject({ code: 'not_found', message: expect.stringContaining('/tmp/w/nope.txt') });
    const big = await call('read_file', { sandbox: sb, path: '/usr/bin/bash', maxBytes: 1000 });
    expect(json(big).error.message).toMatch(/larger than the limit/);
    const hostPath = await call('read_file', { sandbox: sb, path: '/Users/me/secrets.txt' });
    expect(json(hostPath).error.message).toMatch(/host path/);
  });

  it('malformed arguments get schema errors, not crashes', async () => {
    const bad = await client
      .callTool({ name: 'execute_shell_command', arguments: { sandbox: 'x/y', command: 42 } })
      .catch((e: Error) => ({ isError: true, content: [{ type: 'text', text: e.message }] }));
    expect(bad.isError).toBe(true);
    expect(JSON.stringify(bad.content)).toMatch(/sandbox|command|Invalid/i);
    const unknown = await client
      .callTool({ name: 'rm_rf', arguments: {} })
      .catch((e: Error) => ({ isError: true, content: [{ type: 'text', text: e.message }] }));
    expect(unknown.isError).toBe(true);
    // The bridge is still there.
    expect(json(await call('execute_shell_command', { sandbox: sb, command: 'echo alive' })).stdout).toBe('alive\n');
  });

  it('screenshot returns a PNG of the real desktop, also while a human holds the lease; a click meanwhile is refused', async () => {
    expect(json(await call('desktop_start', { sandbox: sb, geometry: '1024x768' }))).toMatchObject({ running: true });
    const shot = await call('screenshot', { sandbox: sb });
    expect(shot.content[0]).toMatchObject({ type: 'image', mimeType: 'image/png' });
    expect(decodePngSize(Buffer.from(shot.content[0]!.data!, 'base64'))).toEqual({ width: 1024, height: 768 });
    expect(json(await call('click', { sandbox: sb, x: 500, y: 400 }))).toMatchObject({ via: 'rfb', pointer: { x: 500, y: 400 } });

    await desk.desktop.takeControl(sb, 'human-viewer');
    const refused = await call('click', { sandbox: sb, x: 10, y: 10 });
    expect(refused.isError).toBe(true);
    expect(json(refused).error.code).toBe('human_has_control');
    // Looking is read-only: the agent sees what the person does (issue 36).
    const watching = await call('screenshot', { sandbox: sb });
    expect(watching.isError).toBeFalsy();
    expect(decodePngSize(Buffer.from(watching.content[0]!.data!, 'base64'))).toEqual({ width: 1024, height: 768 });
    await desk.desktop.giveBack(sb, 'human-viewer');
    expect(json(await call('type', { sandbox: sb, text: 'ok' }))).toMatchObject({ via: 'rfb' });
  });

  it('a third-party client, the OpenAI Agents SDK (MCPServerStdio): strict schemas, structuredContent of exec and screenshot', async () => {
    // The desktop the test above started (1024x768) is still running; this adds a client, not a sandbox.
    const sdk = new MCPServerStdio({
      name: 'sandbox-desk',
      command: process.execPath,
      args: [BIN, 'mcp'],
      env: { ...(process.env as Record<string, string>), SANDBOX_DESK_HOME: home },
      useStructuredContent: true,
    });
    await sdk.connect();
    try {
      const tools = await sdk.listTools();
      expect(tools.length).toBeGreaterThanOrEqual(28);
      // Every tool converts to an OpenAI strict function tool (a failed conversion falls back to strict: false).
      expect(tools.filter((t) => !mcpToFunctionTool(t, sdk, true).strict).map((t) => t.name)).toEqual([]);
      expect(tools.filter((t) => (t as { outputSchema?: unknown }).outputSchema === undefined).map((t) => t.name)).toEqual([]);

      const exec = await sdk.callToolResult('execute_shell_command', {
        sandbox: sb,
        session: 'agents-sdk',
        command: 'cd /tmp && echo sdk',
      });
      expect(exec.isError).toBeFalsy();
      expect(exec.structuredContent).toMatchObject({ exitCode: 0, stdout: 'sdk\n', stderr: '', cwd: '/tmp', cwdObserved: true });
      // What a model sees through the SDK's function tool with useStructuredContent: the structured answer.
      const asTool = mcpToFunctionTool(
        tools.find((t) => t.name === 'execute_shell_command')!,
        sdk,
        true,
      );
      const seen = JSON.parse(
        await asTool.invoke(new RunContext(), JSON.stringify({ sandbox: sb, session: 'agents-sdk', command: 'pwd' })),
      ) as Record<string, unknown>;
      expect(seen).toMatchObject({ exitCode: 0, stdout: '/tmp\n', cwd: '/tmp' });

      const shot = await sdk.callToolResult('screenshot', { sandbox: sb, maxWidth: 512 });
      expect(shot.isError).toBeFalsy();
      expect(shot.structuredContent).toMatchObject({
        width: 512,
        height: 384,
        scale: 0.5,
        screenWidth: 1024,
        screenHeight: 768,
        format: 'png',
      });
      expect(shot.structuredContent).not.toHaveProperty('data');
      const image = (shot.content as { type: string; data?: string }[]).find((c) => c.type === 'image')!;
      expect(decodePngSize(Buffer.from(image.data!, 'base64'))).toEqual({ width: 512, height: 384 });
    } finally {
      await sdk.close();
    }
  });

  it('replay as an agent reads it: replay_events (with the lease this core moved), replay_frame at an event as a PNG', async () => {
    // The bridge process records the desktop it started (issue 16); the recording reaches the click a
    // little after it happened (the recorder writes asynchronously): until then the click has no frame.
    type Ev = { at: string; kind: string; summary: string; tool?: string; frame: { at: string } | null };
    const events = async () => (await call('replay_events', { sandbox: sb })) as ToolResult & { structuredContent: { events: Ev[] } };
    const clickOf = (r: { structuredContent: { events: Ev[] } }) =>
      r.structuredContent.events.find((e) => e.kind === 'action' && e.tool === 'click');
    await expect.poll(async () => clickOf(await events())?.frame ?? null, { timeout: 60_000, interval: 500 }).not.toBeNull();
    const r = await events();
    expect(r.isError).toBeFalsy();
    // The text content carries the same answer as structuredContent.
    expect(json(r).events).toEqual(r.structuredContent.events);
    const click = clickOf(r)!;
    expect(click.summary).toBe('click (500, 400)');
    // This test's core took and gave back the lease while another process recorded: both are on the timeline, once each.
    expect(r.structuredContent.events.filter((e) => e.kind === 'lease').map((e) => e.summary)).toEqual([
      'control: human viewer human-viewer, from the agent (taken by a viewer)',
      'control: the agent, from human viewer human-viewer (given back)',
    ]);

    /** The frame's image as an agent gets it: one image content (a PNG) and its metadata as text and structuredContent. */
    const frameAt = async (args: Record<string, unknown>) => {
      const f = (await call('replay_frame', { sandbox: sb, ...args })) as ToolResult & {
        structuredContent: { at: string; askedAt: string; width: number; height: number; scale: number; format: string };
      };
      expect(f.isError, JSON.stringify(f.content)).toBeFalsy();
      const images = f.content.filter((c) => c.type === 'image');
      expect(images).toHaveLength(1);
      expect(images[0]!.mimeType).toBe('image/png');
      const png = Buffer.from(images[0]!.data!, 'base64');
      // The PNG signature, then IHDR first: its width and height are the size the tool reports.
      expect(png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))).toBe(true);
      expect(png.toString('latin1', 12, 16)).toBe('IHDR');
      const ihdr = { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
      expect(ihdr).toEqual({ width: f.structuredContent.width, height: f.structuredContent.height });
      expect(JSON.parse(f.content.find((c) => c.type === 'text')!.text!)).toEqual(f.structuredContent);
      // The update shown is the last one at or before the time asked for.
      expect(Date.parse(f.structuredContent.at)).toBeLessThanOrEqual(Date.parse(click.frame!.at));
      return { ...f.structuredContent, ihdr };
    };
    expect(await frameAt({ at: click.frame!.at })).toMatchObject({ width: 1024, height: 768, scale: 1, format: 'png' });
    const small = await frameAt({ at: click.frame!.at, maxWidth: 300 });
    expect(small.ihdr.width).toBeLessThanOrEqual(300);
    expect(small).toMatchObject({ width: 300, height: 225, scale: 300 / 1024 });

    // A time outside the recording: refused, naming the span.
    const outside = await call('replay_frame', { sandbox: sb, at: '2001-01-01T00:00:00Z' });
    expect(outside.isError).toBe(true);
    expect(json(outside).error).toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(
        /^2001-01-01T00:00:00\.000Z is outside the screen recording, which spans \d{4}-\d\d-\d\dT\S+Z – \d{4}-\d\d-\d\dT\S+Z$/,
      ),
    });
    // A sandbox nothing was recorded for (it exists; it never ran anything).
    const quiet = uniqueName('norec');
    await desk.createSandbox({ name: quiet, backend: 'local' });
    const none = await call('replay_frame', { sandbox: quiet, at: click.frame!.at });
    expect(none.isError).toBe(true);
    expect(json(none).error).toMatchObject({ code: 'not_found', message: `sandbox ${quiet} has no recording` });
  });

  it('wait_for_control through the OpenAI Agents SDK client: structuredContent; a timeout is an answer; the give-back ends the wait', async () => {
    const sdk = new MCPServerStdio({
      name: 'sandbox-desk',
      command: process.execPath,
      args: [BIN, 'mcp'],
      env: { ...(process.env as Record<string, string>), SANDBOX_DESK_HOME: home },
      useStructuredContent: true,
      // The SDK's default 5 s for listing tools is short on a loaded 2-core CI machine.
      clientSessionTimeoutSeconds: 30,
    });
    await sdk.connect();
    // After the replay test: the lease changes made here would be on the timeline that test reads.
    const person = uniqueName('person');
    try {
      const tool = (await sdk.listTools()).find((t) => t.name === 'wait_for_control')!;
      expect((tool as { outputSchema?: unknown }).outputSchema).toBeDefined();
      expect(mcpToFunctionTool(tool, sdk, true).strict).toBe(true);

      // Nobody holds control: an answer at once.
      expect((await sdk.callToolResult('wait_for_control', { sandbox: sb, timeout: '5s' })).structuredContent).toMatchObject({
        sandbox: sb,
        mayAct: true,
        holder: 'agent',
        timedOut: false,
      });
      await desk.desktop.takeControl(sb, person);
      // Durations as the CLI takes them; past the timeout an answer, not an error.
      const short = await sdk.callToolResult('wait_for_control', { sandbox: sb, timeout: '300ms' });
      expect(short.isError).toBeFalsy();
      expect(short.structuredContent).toMatchObject({ mayAct: false, timedOut: true, holder: 'human', viewerId: person });
      const bad = await sdk.callToolResult('wait_for_control', { sandbox: sb, timeout: 'soon' });
      expect(bad.isError).toBe(true);
      const refusal = JSON.parse((bad.content as { type: string; text?: string }[])[0]!.text!) as {
        error: { code: string; message: string };
      };
      expect(refusal.error).toMatchObject({ code: 'invalid_input', message: 'timeout "soon" is not a duration' });

      const waiting = sdk.callToolResult('wait_for_control', { sandbox: sb, timeout: '20s' });
      // The server answered the calls above at once, so this one is waiting within moments; then the person gives back.
      await new Promise((r) => setTimeout(r, 500));
      const gaveBackAt = Date.now();
      await desk.desktop.giveBack(sb, person);
      const done = await waiting;
      expect(done.structuredContent).toMatchObject({ sandbox: sb, mayAct: true, holder: 'agent', timedOut: false, reason: 'given back' });
      expect((done.structuredContent as { waitedMs: number }).waitedMs).toBeGreaterThanOrEqual(400);
      // Another process's give-back is seen within the poll of the database's change counter (250 ms), not at 20 s.
      expect(Date.now() - gaveBackAt).toBeLessThan(3000);
    } finally {
      await desk.desktop.giveBack(sb, person);
      await sdk.close();
    }
  });

  it('every call is logged — time, sandbox, session, tool, cwd used and observed, exit code, warnings — and exports as JSON lines', () => {
    const entries = desk.store.callLog.list({ sandbox: sb, session: 'agent-a' });
    expect(entries.map((e) => e.tool)).toEqual(['execute_shell_command', 'execute_shell_command']);
    expect(entries[0]).toMatchObject({ cwdUsed: '/home/agent', cwdObserved: '/tmp/a', exitCode: 0, error: null });
    expect(desk.store.callLog.list({ sandbox: sb }).find((e) => e.error?.startsWith('cwd_unresolved'))).toMatchObject({
      tool: 'execute_shell_command',
      session: 'step-x',
    });
    const r = spawnSync(process.execPath, [BIN, 'log', sb, '--jsonl'], {
      env: { ...process.env, SANDBOX_DESK_HOME: home },
      encoding: 'utf8',
    });
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { tool: string; at: string });
    expect(lines.length).toBeGreaterThan(10);
    expect(lines[0]).toHaveProperty('at');
  });

  it('serve --mcp: the same tools over streamable HTTP, behind the agent token it prints', async () => {
    const child: ChildProcess = spawn(process.execPath, [BIN, 'serve', '--mcp', '--json'], {
      env: { ...process.env, SANDBOX_DESK_HOME: home },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const info = await new Promise<{ mcpUrl: string; agentToken: string }>((resolveInfo, reject) => {
        let buf = '';
        child.stdout!.on('data', (c: Buffer) => {
          buf += c.toString();
          if (buf.includes('\n')) resolveInfo(JSON.parse(buf.split('\n')[0]!) as { mcpUrl: string; agentToken: string });
        });
        child.on('exit', (code) => reject(new Error(`serve exited ${code}`)));
      });
      expect((await fetch(info.mcpUrl, { method: 'POST', body: '{}' })).status).toBe(401);
      const http = new Client({ name: 'http-test', version: '1.0.0' });
      await http.connect(
        new StreamableHTTPClientTransport(new URL(info.mcpUrl), {
          requestInit: { headers: { Authorization: `Bearer ${info.agentToken}` } },
        }),
      );
      expect((await http.listTools()).tools.length).toBeGreaterThan(10);
      const r = (await http.callTool({
        name: 'execute_shell_command',
        arguments: { sandbox: sb, session: 'agent-a', command: 'pwd' },
      })) as ToolResult;
      expect(json(r).stdout).toBe('/tmp/a\n');
      await http.close();
    } finally {
      child.kill('SIGINT');
    }
  });
});
