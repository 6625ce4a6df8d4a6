/**
 * Issue 35: every request id JSON-RPC 2.0 allows — a string, a number (1.5 too), null — is answered
 * with exactly that id, over stdio (`sandbox-desk mcp`) and HTTP (`serve --mcp`); an id that is not
 * one (an object, an array, a boolean) gets -32600 saying what an id may be. The SDK's schema takes
 * only strings and integers: 1.5 and null used to get "Unrecognized key: id".
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, removeHome, startServe, tempHome, type ServeChild } from './serve-child.js';

type Reply = { jsonrpc: string; id: unknown; result?: Record<string, unknown>; error?: { code: number; message: string } };

const GOOD_IDS: unknown[] = [1.5, null, -0.25, 'req-1', 7, 1e-7];
const BAD_IDS: Array<[unknown, RegExp]> = [
  [{ a: 1 }, /the id is an object/],
  [[1], /the id is an array/],
  [true, /the id is a boolean/],
];
const ping = (id: unknown) => ({ jsonrpc: '2.0', id, method: 'ping' });
const toolsList = (id: unknown) => ({ jsonrpc: '2.0', id, method: 'tools/list' });

describe('MCP request ids', () => {
  const home = tempHome('ids');
  afterAll(() => removeHome(home));

  it('stdio: 1.5, null, -0.25, strings and integers are answered with the same id; objects, arrays, booleans get -32600', async () => {
    const child = spawn(process.execPath, [BIN, 'mcp'], {
      env: { ...process.env, SANDBOX_DESK_HOME: home },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const send = (v: unknown) => child.stdin.write(JSON.stringify(v) + '\n');
    send({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'ids', version: '1' } },
    });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    for (const id of GOOD_IDS) send(ping(id));
    send(toolsList(2.5));
    for (const [id] of BAD_IDS) send(ping(id));
    child.stdin.end();
    expect(await exited).toBe(0);
    const replies = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Reply);
    const answers = replies.filter((r) => r.id !== 0 && r.result);
    // Answers may come in any order: each good id once, with a result.
    expect(answers.map((r) => r.id).sort()).toEqual([...GOOD_IDS, 2.5].sort());
    expect(answers.find((r) => r.id === 2.5)!.result!.tools).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'execute_shell_command' })]),
    );
    const errors = replies.filter((r) => r.error);
    expect(errors).toHaveLength(BAD_IDS.length);
    BAD_IDS.forEach(([, why], i) => {
      expect(errors[i]).toMatchObject({ id: null, error: { code: -32600 } });
      expect(errors[i]!.error!.message).toMatch(why);
      expect(errors[i]!.error!.message).toMatch(/a JSON-RPC 2\.0 id is a string, a number or null/);
    });
  });

  describe('HTTP (serve --mcp)', () => {
    let s: ServeChild;
    beforeAll(async () => {
      s = await startServe(home);
    });
    afterAll(async () => {
      await s?.stop();
    });
    const post = async (v: unknown) => {
      const r = await fetch(s.mcpUrl, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${s.agentToken}`,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify(v),
      });
      const text = await r.text();
      return { status: r.status, text, body: JSON.parse(text) as Reply };
    };

    it('1.5, null, -0.25, strings and integers are answered with the same id', async () => {
      for (const id of GOOD_IDS) {
        const r = await post(ping(id));
        expect(r.status, r.text).toBe(200);
        expect(r.body).toEqual({ jsonrpc: '2.0', id, result: {} });
      }
      const list = await post(toolsList(2.5));
      expect(list.body.id).toBe(2.5);
      expect(list.text).not.toContain('alias');
      expect(list.body.result!.tools).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'execute_shell_command' })]));
    });

    it('an object, an array or a boolean as id gets -32600 saying what an id may be', async () => {
      for (const [id, why] of BAD_IDS) {
        const r = await post(ping(id));
        expect(r.status).toBe(400);
        expect(r.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
        expect(r.body.error!.message).toMatch(why);
      }
    });
  });
});
