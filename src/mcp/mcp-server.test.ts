/**
 * Issue 36.7: MCP results an agent framework can use. Every tool declares an outputSchema and answers
 * with structuredContent beside the text; every input schema survives the OpenAI Agents SDK's strict
 * conversion; times take the CLI's durations. The core is faked (its boundary: SandboxDesk); the MCP
 * side is real — the official SDK's Client over an in-memory pair, which validates structuredContent
 * against each tool's outputSchema, and the Agents SDK's own MCP → function-tool conversion.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { mcpToFunctionTool, type MCPServer } from '@openai/agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CheckpointInfo, SandboxInfo, SessionInfo } from '../api/contract.js';
import type { SandboxDesk } from '../api/sandbox-desk.js';
import type { Frame } from '../desktop/desktop-service.js';
import type { DesktopStatus } from '../shared/desktop-types.js';
import type { NetworkLogEntry } from '../shared/network-policy.js';
import type { PoolsView } from '../shared/pool-types.js';
import type { ExecResult } from '../shared/exec-result.js';
import type { ReplayEvent } from '../shared/replay-types.js';
import { createMcpServer } from './mcp-server.js';

const sandboxInfo: SandboxInfo = {
  name: 'demo',
  backend: 'docker',
  state: 'running',
  stateDetail: null,
  stateSince: null,
  image: 'sandbox-desk/base:latest',
  user: 'agent',
  declaredDefaultCwd: '~',
  defaultCwd: '/home/agent',
  defaultCwdStatus: { kind: 'declared' } as unknown as SandboxInfo['defaultCwdStatus'],
  home: '/home/agent',
  tempDir: '/tmp',
  supportsStreams: true,
  isContainer: true,
  isolation: 'container',
  lastObservedCwd: null,
  backendRef: 'abc',
  createdAt: '2026-01-02T03:04:05.000Z',
  details: null,
  operation: null,
  network: { mode: 'open', allow: [] },
};
const session: SessionInfo = {
  key: 'default',
  parent: null,
  cwd: '/tmp/w',
  source: 'observed',
  observedAt: null,
  createdAt: '2026-01-02T03:04:05.000Z',
  lastWarnings: [],
  restoredFrom: null,
};
const execResult: ExecResult = {
  exitCode: 0,
  stdout: 'hi\n',
  stderr: '',
  encoding: { stdout: 'utf8', stderr: 'utf8' },
  cwd: '/tmp/w',
  cwdObserved: true,
  startCwd: '/tmp/w',
  cwdSource: 'session',
  warnings: [{ code: 'cwd_missing', message: 'a warning', asked: '/x', used: '/tmp/w' }],
  deniedCount: 0,
  mode: 'session' as ExecResult['mode'],
  timedOut: false,
  interrupted: false,
  truncated: { stdout: false, stderr: false },
  durationMs: 12,
  queuedMs: 0,
  session: 'default',
};
const frame: Frame = {
  frameId: 'f-1',
  width: 800,
  height: 500,
  scale: 0.625,
  screenWidth: 1280,
  screenHeight: 800,
  takenAt: '2026-01-02T03:04:05.000Z',
  format: 'png',
  firstSinceChange: false,
};
const checkpointInfo: CheckpointInfo = {
  id: 'c1',
  sandbox: 'demo',
  backend: 'docker',
  label: 'before',
  createdAt: '2026-01-02T03:04:05.000Z',
  sizeBytes: null,
  memory: false,
  broken: false,
  brokenDetail: null,
  sessions: [{ key: 'default', cwd: '/tmp/w' }],
};
const desktopStatus: DesktopStatus = {
  sandbox: 'demo',
  running: true,
  placement: 'sandbox',
  display: ':20',
  geometry: '1280x800',
  leaseHolder: 'agent',
  leaseViewer: null,
  missing: [],
  reason: null,
  chromiumSandbox: false,
  displayIsolation: 'isolated',
  displayIsolationReason: null,
  displayUser: 'sdesk-display',
  shellDisplayGranted: false,
  recording: { on: true, bytes: 0, since: '2026-01-02T03:04:05.000Z', warning: null },
};
// As the pump writes a line for a process it could not name: `process` null, no pid.
const connection: NetworkLogEntry = {
  at: '2026-01-02T03:04:05.000Z',
  sandbox: 'demo',
  host: 'example.com',
  port: 443,
  verdict: 'denied',
  kind: 'connect',
  reason: 'not on the allow list',
  process: null,
};
// A full pool and one that stopped on a full disk: what `pool list` shows, with nothing faked in the tool.
const poolsView: PoolsView = {
  memoryBudgetMiB: 2048,
  memoryMiB: 1280,
  refilling: true,
  pools: [
    {
      key: '0a1b2c3d4e',
      template: { image: 'sandbox-desk/base:latest', cpus: null, memoryMiB: null, desktop: false },
      description: 'sandbox-desk/base:latest',
      size: 1,
      ready: 1,
      filling: 0,
      state: 'full',
      warning: null,
      memoryMiB: 256,
    },
    {
      key: '5f6a7b8c9d',
      template: { image: 'sandbox-desk/desktop:latest', cpus: 2, memoryMiB: 2048, desktop: true },
      description: 'sandbox-desk/desktop:latest, cpus 2, memory 2048 MiB, desktop',
      size: 1,
      ready: 0,
      filling: 0,
      state: 'stopped',
      warning: 'the disk is full (no space left on device)',
      memoryMiB: 1024,
    },
  ],
};
const events: ReplayEvent[] = [{ at: '2026-01-02T03:04:05.000Z', kind: 'command', summary: 'ls', session: 'default' }];

/** The part of the core the tested tools reach; `since` is what replay_events passed on. */
function fakeDesk() {
  const seen: { since?: string | undefined; until?: string | undefined }[] = [];
  const desk = {
    desktop: {
      recordRunningDesktops: () => undefined,
      screenshot: async () => ({ frame, image: Buffer.from('not-really-a-png') }),
      start: async () => desktopStatus,
    },
    store: { callLog: { append: () => undefined }, sandboxes: { get: () => ({ user: 'agent' }) } },
    listSandboxes: async () => [sandboxInfo],
    inspectSandbox: async () => sandboxInfo,
    listSessions: () => [session],
    exec: async () => ({ ...execResult, stdoutBytes: Buffer.from(execResult.stdout), stderrBytes: Buffer.alloc(0) }),
    io: {
      readFile: async () => ({ path: '/tmp/w/a.txt', bytes: Buffer.from('hello'), session: 'default', cwd: '/tmp/w' }),
      listDir: async () => ({
        path: '/tmp/w',
        entries: [{ name: 'a.txt', type: 'file', size: 5 }],
        session: 'default',
        cwd: '/tmp/w',
      }),
    },
    checkpoints: { list: async () => [checkpointInfo] },
    sandboxNetwork: async () => ({ mode: 'allow', allow: ['pypi.org'] }),
    network: { log: () => [connection] },
    pools: { list: () => poolsView },
    replay: {
      events: (sandbox: string, range: { since?: string; until?: string }) => {
        seen.push(range);
        return { sandbox, startedAt: null, endedAt: null, events };
      },
      list: () => [],
    },
  };
  return { desk: desk as unknown as SandboxDesk, seen };
}

type Result = {
  isError?: boolean;
  content: { type: string; text?: string; data?: string; mimeType?: string }[];
  structuredContent?: Record<string, unknown>;
};

describe('MCP tools: outputSchema, structuredContent, strict input schemas', () => {
  const { desk, seen } = fakeDesk();
  const client = new Client({ name: 'unit', version: '1.0.0' });
  const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as Result;

  beforeAll(async () => {
    const [a, b] = InMemoryTransport.createLinkedPair();
    await createMcpServer(desk).connect(a);
    await client.connect(b);
  });
  afterAll(async () => {
    await client.close();
  });

  it('every tool declares an object outputSchema; a tool without arguments says additionalProperties: false', async () => {
    const { tools } = await client.listTools();
    expect(tools.length).toBeGreaterThanOrEqual(28);
    const missing = tools.filter((t) => t.outputSchema?.type !== 'object').map((t) => t.name);
    expect(missing, 'tools without an outputSchema').toEqual([]);
    const open = tools
      .filter((t) => Object.keys(t.inputSchema.properties ?? {}).length === 0 && t.inputSchema.additionalProperties !== false)
      .map((t) => t.name);
    expect(open, 'argument-less tools whose input schema is an open object').toEqual([]);
    expect(tools.find((t) => t.name === 'sandbox_list')!.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
  });

  it('output schemas are open objects: a field a result gains later does not fail a client that validates', async () => {
    const { tools } = await client.listTools();
    /** Paths of every object in a JSON schema that forbids fields it does not name. */
    const closed = (schema: unknown, at: string): string[] => {
      if (typeof schema !== 'object' || schema === null) return [];
      const here = (schema as { additionalProperties?: unknown }).additionalProperties === false ? [at] : [];
      return [...here, ...Object.entries(schema).flatMap(([k, v]) => closed(v, `${at}.${k}`))];
    };
    expect(tools.flatMap((t) => closed(t.outputSchema, t.name))).toEqual([]);
  });

  it("every tool's input schema passes the OpenAI Agents SDK's strict-mode conversion", async () => {
    const { tools } = await client.listTools();
    // What MCPServerStdio hands the conversion: the server is only named here.
    const server = { name: 'sandbox-desk' } as unknown as MCPServer;
    const warnings: unknown[][] = [];
    const warn = console.warn;
    console.warn = (...args: unknown[]) => void warnings.push(args);
    try {
      // A schema that fails the conversion falls back to strict: false (and logs "Error converting MCP schema to strict mode").
      const notStrict = tools
        .filter((t) => !mcpToFunctionTool(t as Parameters<typeof mcpToFunctionTool>[0], server, true).strict)
        .map((t) => t.name);
      expect(notStrict).toEqual([]);
    } finally {
      console.warn = warn;
    }
    expect(warnings.filter((w) => String(w[0]).includes('strict mode'))).toEqual([]);
  });

  it('sandbox_list, execute_shell_command, read_file, list_dir: structuredContent, the same JSON as text', async () => {
    const list = await call('sandbox_list', {});
    expect(list.structuredContent).toMatchObject({ sandboxes: [{ name: 'demo', home: '/home/agent' }] });
    const exec = await call('execute_shell_command', { sandbox: 'demo', command: 'echo hi' });
    expect(exec.structuredContent).toMatchObject({ exitCode: 0, stdout: 'hi\n', cwd: '/tmp/w', truncated: { stdout: false } });
    const read = await call('read_file', { sandbox: 'demo', path: 'a.txt' });
    expect(read.structuredContent).toEqual({ path: '/tmp/w/a.txt', size: 5, encoding: 'utf8', content: 'hello' });
    const dir = await call('list_dir', { sandbox: 'demo' });
    expect(dir.structuredContent).toEqual({ path: '/tmp/w', entries: [{ name: 'a.txt', type: 'file', size: 5 }] });
    for (const r of [list, exec, read, dir]) {
      expect(r.isError).toBeFalsy();
      expect(r.content).toHaveLength(1);
      expect(JSON.parse(r.content[0]!.text!)).toEqual(r.structuredContent);
    }
  });

  it('sandbox_network, checkpoint_list, desktop_start: answers of the core’s own types conform to their schemas', async () => {
    // The official client rejects structuredContent that does not match the outputSchema: a pass is the check.
    expect((await call('sandbox_network', { sandbox: 'demo' })).structuredContent).toEqual({
      policy: { mode: 'allow', allow: ['pypi.org'] },
      connections: [connection],
    });
    expect((await call('checkpoint_list', {})).structuredContent).toEqual({ checkpoints: [checkpointInfo] });
    expect((await call('desktop_start', { sandbox: 'demo' })).structuredContent).toEqual(desktopStatus);
  });

  it('screenshot: the image, and its frame (not the bytes) as structuredContent', async () => {
    const shot = await call('screenshot', { sandbox: 'demo', maxWidth: 800 });
    expect(shot.content[0]).toMatchObject({
      type: 'image',
      mimeType: 'image/png',
      data: Buffer.from('not-really-a-png').toString('base64'),
    });
    expect(shot.structuredContent).toEqual(frame);
    expect(JSON.parse(shot.content[1]!.text!)).toEqual(frame);
  });

  it('replay_events takes durations as the CLI does (since: "2m"), and says what a bad one should be', async () => {
    const before = Date.now();
    const r = await call('replay_events', { sandbox: 'demo', since: '2m', until: '2026-03-01T10:00:00Z' });
    expect(r.isError, r.content[0]?.text).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ sandbox: 'demo', events: [{ kind: 'command', summary: 'ls', frame: null }] });
    const since = Date.parse(seen.at(-1)!.since!);
    expect(since).toBeGreaterThanOrEqual(before - 120_000 - 1000);
    expect(since).toBeLessThanOrEqual(Date.now() - 120_000);
    expect(seen.at(-1)!.until).toBe('2026-03-01T10:00:00.000Z');

    const bad = await call('replay_events', { sandbox: 'demo', since: 'yesterday-ish' });
    expect(bad.isError).toBe(true);
    // An error is not the success shape: no structuredContent, the error as text.
    expect(bad.structuredContent).toBeUndefined();
    expect(JSON.parse(bad.content[0]!.text!)).toEqual({
      error: {
        code: 'invalid_input',
        message: 'since "yesterday-ish" is not a time',
        hint: expect.stringMatching(/ISO 8601 .* or a duration ago \(90s, 10m/),
      },
    });
  });
});

describe('execute_shell_command: an over-large result (issue 34)', () => {
  it('1.5 MB of NULs fits one 8 MiB message, both copies counted, with its exit code and cwd and what was cut', async () => {
    const nuls = Buffer.alloc(1_500_000);
    const desk = {
      desktop: { recordRunningDesktops: () => undefined },
      store: { callLog: { append: () => undefined }, sandboxes: { get: () => ({ user: 'agent' }) } },
      exec: async () => ({ ...execResult, exitCode: 7, stdout: nuls.toString('utf8'), stdoutBytes: nuls, stderrBytes: Buffer.alloc(0) }),
    } as unknown as SandboxDesk;
    const client = new Client({ name: 'unit', version: '1.0.0' });
    const [a, b] = InMemoryTransport.createLinkedPair();
    await createMcpServer(desk).connect(a);
    await client.connect(b);
    try {
      const r = (await client.callTool({
        name: 'execute_shell_command',
        arguments: { sandbox: 'demo', command: 'head -c 1500000 /dev/zero' },
      })) as Result;
      // The JSON-RPC message around it adds well under the 64 KiB headroom.
      expect(Buffer.byteLength(JSON.stringify(r))).toBeLessThanOrEqual(8 * 1024 * 1024 - 64 * 1024);
      const sc = r.structuredContent as Record<string, unknown> & {
        stdout: string;
        stdoutTruncated: { keptBytes: number; totalBytes: number };
      };
      expect(sc).toMatchObject({ exitCode: 7, cwd: '/tmp/w', cwdObserved: true, truncated: { stdout: true } });
      expect(sc.stdoutTruncated).toEqual({ keptBytes: sc.stdout.length, totalBytes: 1_500_000 });
      expect(sc.stdout.length).toBeGreaterThan(500_000);
      expect(JSON.parse(r.content[0]!.text!)).toEqual(sc);
      expect((sc.warnings as { code: string }[]).map((w) => w.code)).toContain('output_truncated');
    } finally {
      await client.close();
    }
  });
});

describe('warm pools over MCP (issue 37): pool_list, read-only', () => {
  /** A scoped agent's server: the scope must not hide the pools (they are nobody's sandboxes). */
  async function scopedClient() {
    const { desk } = fakeDesk();
    const logged: { tool: string; sandbox: string | null; error: string | null }[] = [];
    (desk.store as unknown as { callLog: { append: (e: (typeof logged)[number]) => void } }).callLog.append = (e) => void logged.push(e);
    const client = new Client({ name: 'unit', version: '1.0.0' });
    const [a, b] = InMemoryTransport.createLinkedPair();
    await createMcpServer(desk, { scope: { tools: 'mcp', sandboxes: ['demo'] } }).connect(a);
    await client.connect(b);
    return { client, logged };
  }

  it('pool_list answers each pool (template, ready/size, state, a stopped pool’s warning) and the budget as structuredContent', async () => {
    const { client, logged } = await scopedClient();
    try {
      // The official client validates structuredContent against the outputSchema: a pass is that check too.
      const r = (await client.callTool({ name: 'pool_list', arguments: {} })) as Result;
      expect(r.isError, r.content[0]?.text).toBeFalsy();
      expect(r.structuredContent).toEqual(poolsView);
      expect(JSON.parse(r.content[0]!.text!)).toEqual(poolsView);
      expect(logged).toEqual([expect.objectContaining({ tool: 'pool_list', sandbox: null, error: null })]);
      // Arguments are refused by the strict input schema (an agent cannot slip a size in).
      const sized = (await client.callTool({ name: 'pool_list', arguments: { size: 3 } })) as Result;
      expect(sized.isError).toBe(true);
    } finally {
      await client.close();
    }
  });

  it('no tool sets or drains a pool or creates a sandbox: those are the person’s (CLI, UI token)', async () => {
    const { client } = await scopedClient();
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('pool_list');
      expect(names.filter((n) => /^pool_/.test(n))).toEqual(['pool_list']);
      expect(names.filter((n) => /create_sandbox|sandbox_create|pool_set|pool_drain/.test(n))).toEqual([]);
      const set = (await client.callTool({ name: 'pool_set', arguments: { size: 2 } })) as Result;
      expect(set.isError).toBe(true);
      expect(set.content[0]!.text).toMatch(/pool_set not found/);
    } finally {
      await client.close();
    }
  });
});
