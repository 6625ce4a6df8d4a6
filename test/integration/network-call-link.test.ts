/**
 * The agent call log links a command to the connections it made (issue 17), against the real engine:
 * an agent's `execute_shell_command` (through the real MCP server, over the SDK's in-memory transport)
 * reaches an allowed test server in a container this test creates; the connection's log line names
 * the process inside the sandbox and the call's id, and the call log (the API's `callLog`) lists the
 * connection under that call — linked by the process's ancestry to the command's shell. A command run
 * outside any agent call (a plain exec) is on the log without a call.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallLogEntry, NetworkLogEntry } from '../../src/api/contract.js';
import { createDispatcher, type StreamIssuer } from '../../src/api/dispatch.js';
import { createMcpServer } from '../../src/mcp/mcp-server.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';
import { CLIENT, startTestServers, type TestServers } from './network/test-servers.js';

describe('call log ↔ connections (real docker sandbox, the test’s own servers)', () => {
  let t: TestDesk;
  let srv: TestServers;
  let client: Client;
  const name = uniqueName('netcall');

  /** Waits until the log line for `host` written after `since` has its process looked up (bounded). */
  const lineFor = async (host: string, since: number): Promise<NetworkLogEntry> => {
    for (let i = 0; i < 100; i++) {
      const hit = t.desk.network.log(name).find((e) => e.host === host && Date.parse(e.at) >= since);
      if (hit) return hit;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no log line for ${host}`);
  };

  beforeAll(async () => {
    srv = startTestServers();
    t = tempDesk();
    await t.desk.createSandbox({ name, backend: 'docker', network: 'allow', allow: [`${srv.ip.a}:8000`, `${srv.ip.b}:8000`] });
    const [a, b] = InMemoryTransport.createLinkedPair();
    await createMcpServer(t.desk).connect(b);
    client = new Client({ name: 'sandbox-desk-test', version: '1.0.0' });
    await client.connect(a);
  });
  afterAll(async () => {
    srv?.dispose(); // first: a teardown that throws below must not leave the servers running
    await client?.close();
    await t?.dispose();
  });

  it('an agent command’s connection names its process and its call; the call lists it', async () => {
    const since = Date.now();
    const r = (await client.callTool({
      name: 'execute_shell_command',
      arguments: {
        sandbox: name,
        command: `${CLIENT}\nvia_proxy ${srv.ip.a} 8000; bash -c 'exec -a linkprobe sleep 0' ; ( via_proxy ${srv.ip.a} 8000 )`,
      },
    })) as { content: Array<{ text: string }>; isError?: boolean };
    expect(r.isError).toBeFalsy();
    expect(r.content[0]!.text).toContain('server-a');

    const line = await lineFor(srv.ip.a, since);
    expect(line.process).toMatch(/\(pid \d+\)/);
    expect(line.pid).toBeGreaterThan(0);

    const dispatch = createDispatcher(t.desk, {} as StreamIssuer);
    const res = (await dispatch('callLog', { sandbox: name })) as { ok: CallLogEntry[] };
    const call = res.ok.find((c) => c.tool === 'execute_shell_command');
    expect(call).toBeDefined();
    const linked = call!.connections ?? [];
    expect(linked.filter((c) => c.host === srv.ip.a).length).toBe(2);
    expect(linked.every((c) => c.linkedBy === 'process')).toBe(true);
    // The subshell's connection: a child of the command's shell (its ancestry holds the shell's pid).
    expect(linked.some((c) => (c.ancestry ?? []).length > 0 && c.pid !== linked[0]!.pid)).toBe(true);

    const log = (await dispatch('networkLog', { sandbox: name })) as { ok: NetworkLogEntry[] };
    expect(log.ok.filter((e) => e.host === srv.ip.a && e.callId === call!.id).length).toBe(2);
  });

  it('a command run outside an agent call is on the log, linked to no call', async () => {
    const since = Date.now();
    const out = await t.desk.exec({ sandbox: name, command: `${CLIENT}\nvia_proxy ${srv.ip.b} 8000` });
    expect(out.stdout).toContain('server-b');
    const line = await lineFor(srv.ip.b, since);
    expect(line.process).not.toBeNull();
    expect(t.desk.network.log(name).find((e) => e.host === srv.ip.b)?.callId).toBeUndefined();
  });
});
