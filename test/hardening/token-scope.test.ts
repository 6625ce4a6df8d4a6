/**
 * Issue 18.4: the token an agent gets opens the MCP tools and nothing else. Against a real `serve
 * --mcp` child and a real Docker sandbox: every refusal of an agent token (the app's API, exec as
 * root, host mounts, the lease and control endpoints, the viewer, a sandbox outside its scope), the
 * UI token refused at /mcp, and tokens made and removed by `sandbox-desk token`.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliIn, removeHome, startServe, tempHome, type ServeChild } from './serve-child.js';

type ToolResult = { isError?: boolean; content: { type: string; text?: string }[] };
const json = (r: ToolResult) => JSON.parse(r.content[0]!.text!) as Record<string, any>;

describe('agent tokens: the MCP tools, nothing else', () => {
  let s: ServeChild;
  const home = tempHome('scope');
  const inScope = `scope-a-${process.pid}`;
  const outside = `scope-b-${process.pid}`;
  let scoped: string;
  const clients: Client[] = [];

  const api = (method: string, params: unknown, token: string) =>
    fetch(`${s.origin}/api/call/${method}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(params),
    });
  const mcp = async (token: string) => {
    const c = new Client({ name: 'scope-test', version: '1.0.0' });
    await c.connect(
      new StreamableHTTPClientTransport(new URL(s.mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
    );
    clients.push(c);
    return c;
  };
  const call = async (c: Client, name: string, args: Record<string, unknown>) =>
    (await c.callTool({ name, arguments: args })) as ToolResult;

  beforeAll(async () => {
    const cli = cliIn(home);
    for (const [name, backend] of [
      [inScope, 'docker'],
      [outside, 'local'],
    ] as const) {
      const r = cli(['sandbox', 'create', name, '--backend', backend, '--json']);
      expect(r.status, r.stderr).toBe(0);
    }
    const made = cli(['token', 'create', '--sandbox', inScope, '--label', 'scoped', '--json']);
    expect(made.status, made.stderr).toBe(0);
    scoped = (JSON.parse(made.stdout) as { token: string }).token;
    s = await startServe(home);
  });
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await s?.stop();
    cliIn(home)(['sandbox', 'rm', inScope, '--force']);
    removeHome(home);
  });

  it('serve --mcp prints an agent token apart from the UI token', () => {
    expect(s.agentToken).toMatch(/^sdat_/);
    expect(s.agentToken).not.toBe(s.uiToken);
  });

  it("an agent token is refused on /api/call/*: exec as root, a host mount, the lease and control, a viewer's ticket", async () => {
    const refusals: [string, unknown][] = [
      ['listSandboxes', {}],
      ['exec', { sandbox: inScope, command: 'id -u', user: 'root' }],
      ['createSandbox', { name: `m${process.pid}`, backend: 'docker', mounts: [{ hostPath: '/', sandboxPath: '/host' }] }],
      ['lease', { sandbox: inScope }],
      ['giveBack', { sandbox: inScope, viewerId: 'human-1' }],
      ['takeControl', { sandbox: inScope, viewerId: 'agent-1' }],
      ['screenTicket', { sandbox: inScope }],
      ['terminalOpen', { sandbox: inScope, cols: 80, rows: 24 }],
      // Warm pools hold host memory and live in the config: a person's (issue 37).
      ['poolSet', { size: 2 }],
      ['poolDrain', { all: true }],
    ];
    for (const token of [s.agentToken!, scoped]) {
      for (const [method, params] of refusals) {
        const res = await api(method, params, token);
        expect(res.status, method).toBe(403);
        expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/agent token opens only the MCP tools/);
      }
      expect((await fetch(`${s.origin}/desktop/${inScope}`, { headers: { Authorization: `Bearer ${token}` } })).status).toBe(403);
      // Nothing was made, nothing ran.
      expect((await (await api('listSandboxes', {}, s.uiToken)).json()) as { ok: { name: string }[] }).toMatchObject({
        ok: expect.not.arrayContaining([expect.objectContaining({ name: `m${process.pid}` })]),
      });
    }
  });

  it('the UI token does not open /mcp; no token is a 401; both answer as JSON-RPC', async () => {
    const post = (headers: Record<string, string>) =>
      fetch(s.mcpUrl, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
    const ui = await post({ Authorization: `Bearer ${s.uiToken}` });
    expect(ui.status).toBe(403);
    expect(await ui.json()).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { message: expect.stringMatching(/UI token does not open \/mcp/) },
    });
    const none = await post({});
    expect(none.status).toBe(401);
    expect(await none.json()).toMatchObject({ jsonrpc: '2.0', error: { message: expect.stringMatching(/agent token/) } });
    expect((await post({ Cookie: `sdesk_token=${s.uiToken}` })).status).toBe(403);
  });

  it('over MCP: commands as the sandbox user only, never as root (agents.allowOtherUsers is off)', async () => {
    const c = await mcp(s.agentToken!);
    const root = await call(c, 'execute_shell_command', { sandbox: inScope, command: 'id -u', user: 'root' });
    expect(root.isError).toBe(true);
    expect(json(root).error).toMatchObject({
      code: 'refused',
      message: expect.stringMatching(/as the sandbox's user \(agent\), not as root/),
      hint: expect.stringMatching(/agents\.allowOtherUsers/),
    });
    expect(json(await call(c, 'execute_shell_command', { sandbox: inScope, command: 'id -un', user: 'agent' })).stdout).toBe('agent\n');
    expect(json(await call(c, 'execute_shell_command', { sandbox: inScope, command: 'id -un' })).stdout).toBe('agent\n');
    const tools = (await c.listTools()).tools.map((t) => t.name);
    // wait_for_control only waits (it takes nothing): the agent still has no tool that takes or gives control.
    expect(tools.filter((t) => /lease|(?<!wait_for_)control|give|take|mount|create_sandbox|sandbox_create/.test(t))).toEqual([]);
    // Pools are read-only to agents: listed, never set or drained.
    expect(tools.filter((t) => t.startsWith('pool_'))).toEqual(['pool_list']);
  });

  it('a scoped token sees and touches only its sandboxes', async () => {
    const c = await mcp(scoped);
    expect((json(await call(c, 'sandbox_list', {})).sandboxes as { name: string }[]).map((x) => x.name)).toEqual([inScope]);
    for (const [tool, args] of [
      ['execute_shell_command', { command: 'true' }],
      ['read_file', { path: '/etc/hostname' }],
      ['write_file', { path: '/tmp/x', content: 'x' }],
      ['list_dir', {}],
      ['sandbox_inspect', {}],
      ['sandbox_logs', {}],
      ['session_create', { key: 'k' }],
      ['desktop_start', {}],
      ['screenshot', {}],
      ['replay_events', {}],
      ['replay_frame', { at: '2026-01-02T03:04:05Z' }],
    ] as const) {
      const r = await call(c, tool, { sandbox: outside, ...args });
      expect(r.isError, tool).toBe(true);
      expect(json(r).error.message, tool).toMatch(new RegExp(`scoped to sandbox ${inScope}; ${outside} is outside it`));
    }
    expect(json(await call(c, 'execute_shell_command', { sandbox: inScope, command: 'echo in-scope' })).stdout).toBe('in-scope\n');
    // The unscoped agent sees both.
    const all = await mcp(s.agentToken!);
    expect((json(await call(all, 'sandbox_list', {})).sandboxes as { name: string }[]).map((x) => x.name).sort()).toEqual(
      [inScope, outside].sort(),
    );
    // The unscoped agent may read the outside sandbox's replay: the scoped agent's refused attempts are
    // on its timeline, each with its refusal; it has no recording, so replay_frame says that — not the scope.
    const replay = json(await call(all, 'replay_events', { sandbox: outside })) as {
      events: { kind: string; tool?: string; error?: string }[];
    };
    expect(replay.events.filter((e) => e.kind === 'agentCall' && e.tool?.startsWith('replay_')).map((e) => [e.tool, e.error])).toEqual([
      ['replay_events', expect.stringMatching(/^refused: .*; \S+ is outside it$/)],
      ['replay_frame', expect.stringMatching(/^refused: .*; \S+ is outside it$/)],
    ]);
    const frame = await call(all, 'replay_frame', { sandbox: outside, at: '2026-01-02T03:04:05Z' });
    expect(frame.isError).toBe(true);
    expect(json(frame).error).toMatchObject({ code: 'not_found', message: `sandbox ${outside} has no recording` });
  });

  it('token list shows no secrets; token rm refuses the token from the next request', async () => {
    const listed = await s.cli(['token', 'list', '--json']);
    expect(listed.status).toBe(0);
    expect(listed.stdout).not.toContain(scoped.slice(14));
    const [entry] = JSON.parse(listed.stdout) as { id: string; label: string; scope: { sandboxes: string[] } }[];
    expect(entry).toMatchObject({ label: 'scoped', scope: { sandboxes: [inScope] } });
    expect((await s.cli(['token', 'rm', entry!.id])).status).toBe(0);
    const res = await fetch(s.mcpUrl, {
      method: 'POST',
      headers: { Authorization: `Bearer ${scoped}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    });
    expect(res.status).toBe(401);
    const bad = await s.cli(['token', 'create', '--sandbox', 'no/slash']);
    expect(bad.status).toBe(125);
    expect(bad.stderr).toMatch(/--sandbox "no\/slash"/);
  });
});
