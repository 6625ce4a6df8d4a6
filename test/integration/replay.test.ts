/**
 * Replay (issue 16) with a real Docker sandbox: a terminal is recorded as asciicast v2 (checked by
 * our reader and by asciinema itself when installed), an agent's call through the real MCP server
 * (`sandbox-desk mcp`, another process on the same data dir) becomes an event with the cwd it
 * observed, and the CLI refuses an export range outside the recording with exit 125 and the span.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxDesk } from '../../src/api/sandbox-desk.js';
import { castProblems, parseCast } from '../../src/session/cast-file.js';
import { hasAsciinema, readWithAsciinema } from './asciinema.js';
import { uniqueName } from './helpers.js';

const BIN = resolve(import.meta.dirname, '../../bin/sandbox-desk.js');

describe('replay with a docker sandbox', () => {
  let home: string;
  let desk: SandboxDesk;
  let client: Client;
  const sb = uniqueName('replay');
  const env = () => ({ ...(process.env as Record<string, string>), SANDBOX_DESK_HOME: home });

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'sdesk-replay-'));
    desk = new SandboxDesk({ dataDir: home });
    await desk.createSandbox({ name: sb, backend: 'docker', image: 'sandbox-desk/base:latest' });
    client = new Client({ name: 'sandbox-desk-replay-test', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env: env(), stderr: 'pipe' }));
  }, 180_000);
  afterAll(async () => {
    await client?.close();
    for (const s of desk?.store.sandboxes.list() ?? []) await desk.removeSandbox(s.name, { force: true }).catch(() => undefined);
    await desk?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('records a terminal as asciicast v2 and lists the agent call with the cwd it observed', async () => {
    const { terminal } = await desk.io.openTerminal({ sandbox: sb, session: 'tty', cols: 100, rows: 30 });
    let screen = '';
    terminal.attach({ send: (d, done) => ((screen += d.toString()), done()), bufferedAmount: 0 });
    const cwds: string[] = [];
    terminal.onCwd((c) => cwds.push(c));
    await expect.poll(() => cwds.length, { timeout: 30_000 }).toBeGreaterThan(0);
    terminal.write('mkdir -p /tmp/proj && cd /tmp/proj && echo hi-from-$((40+2))\r');
    await expect.poll(() => cwds.at(-1), { timeout: 30_000 }).toBe('/tmp/proj');
    await expect.poll(() => screen.includes('hi-from-42'), { timeout: 10_000 }).toBe(true);
    terminal.resize(120, 40);

    // While the terminal is open its recording is listed as live and its cast is already valid.
    const live = desk.replay.list(sb)[0]!;
    expect(live.recording).toBe(true);
    expect(live.terminals.map((t) => t.terminalId)).toEqual([terminal.id]);
    expect(live.terminals[0]).toMatchObject({ session: 'tty', cols: 100, rows: 30 });

    // The agent, through the real MCP server in another process.
    const r = (await client.callTool({
      name: 'execute_shell_command',
      arguments: { sandbox: sb, command: 'cd /tmp/proj && echo agent-hi' },
    })) as {
      isError?: boolean;
    };
    expect(r.isError).toBeFalsy();

    desk.io.closeTerminal(terminal.id);
    await expect.poll(() => terminal.exited, { timeout: 20_000 }).toBe(true);
    await expect.poll(() => desk.replay.list(sb)[0]!.recording, { timeout: 5_000 }).toBe(false);

    const { cast } = desk.replay.cast(sb, terminal.id);
    expect(castProblems(cast)).toEqual([]);
    const parsed = parseCast(cast)!;
    expect(parsed.header).toMatchObject({ version: 2, width: 100, height: 30 });
    expect(
      parsed.events
        .filter((e) => e[1] === 'o')
        .map((e) => e[2])
        .join(''),
    ).toContain('hi-from-42');
    expect(parsed.events).toContainEqual([expect.any(Number), 'r', '120x40']);
    if (hasAsciinema) {
      const file = join(home, 'check.cast');
      writeFileSync(file, cast);
      const read = readWithAsciinema(file);
      expect(read).toMatchObject({ version: 2, header: { width: 100, height: 30 } });
      expect(read.output).toContain('hi-from-42');
      expect(read.duration).toBeGreaterThan(0);
    } else {
      console.warn('asciinema is not installed (scripts/setup.sh installs it): the cast was checked by castProblems only');
    }

    const { events } = desk.replay.events(sb);
    const agentCall = events.find((e) => e.kind === 'agentCall' && e.tool === 'execute_shell_command');
    // One event for the agent's one act (issue 36): the call carries its command's cwd and session.
    expect(agentCall).toMatchObject({
      cwdObserved: '/tmp/proj',
      cwdUsed: expect.any(String),
      exitCode: 0,
      session: expect.any(String),
      summary: 'execute_shell_command: cd /tmp/proj && echo agent-hi',
    });
    expect(events.filter((e) => e.kind === 'command' && e.summary === 'cd /tmp/proj && echo agent-hi')).toEqual([]);
    // Oldest first, on one clock.
    expect(events.map((e) => e.at)).toEqual([...events.map((e) => e.at)].sort());

    // replay_events over MCP: the same events, structured.
    const mcp = (await client.callTool({ name: 'replay_events', arguments: { sandbox: sb } })) as {
      structuredContent?: { events: Array<{ kind: string; cwdObserved?: string | null; frame: unknown }> };
    };
    expect(mcp.structuredContent!.events.some((e) => e.kind === 'agentCall' && e.cwdObserved === '/tmp/proj')).toBe(true);
    // No desktop ran here: nothing has a frame, and replay_frame says there is no screen to show.
    expect(mcp.structuredContent!.events.every((e) => e.frame === null)).toBe(true);
    const frame = (await client.callTool({ name: 'replay_frame', arguments: { sandbox: sb, at: agentCall!.at } })) as {
      isError?: boolean;
      content: { type: string; text?: string }[];
    };
    expect(frame.isError).toBe(true);
    expect(JSON.parse(frame.content[0]!.text!)).toMatchObject({
      error: { code: 'not_found', message: `sandbox ${sb} has no screen recording`, hint: expect.stringMatching(/desktop start/) },
    });
  }, 180_000);

  it('the CLI refuses an export range outside the recording: exit 125 and the span', () => {
    const out = join(home, 'export');
    const r = spawnSync(
      process.execPath,
      [BIN, 'replay', 'export', sb, '--from', '2001-01-01T00:00:00Z', '--to', '2001-01-01T00:01:00Z', '--out', out],
      { env: env(), encoding: 'utf8' },
    );
    expect(r.status).toBe(125);
    expect(r.stderr).toMatch(
      /the range 2001-01-01T00:00:00.000Z – 2001-01-01T00:01:00.000Z is outside the recording of replay-\S+ \(\d{4}-.* – \d{4}-.*\)/,
    );
    // And the whole recording exports: the cast and the events.
    const ok = spawnSync(process.execPath, [BIN, 'replay', 'export', sb, '--out', out, '--json'], { env: env(), encoding: 'utf8' });
    expect(ok.status, ok.stderr).toBe(0);
    const result = JSON.parse(ok.stdout) as { casts: string[]; events: string; video: unknown };
    expect(result.casts).toHaveLength(1);
    expect(result.video).toBeNull();
  });
});
