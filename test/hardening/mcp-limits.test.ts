/**
 * Issue 18.6: MCP size limits that hold. The stated limits (8 MiB per message, file chunks of 4 MiB up
 * and 2 MiB down — a read's answer carries its content twice, issue 36.7) are what the transports
 * carry: above them a JSON-RPC error, never a silent exit or a dropped connection; large files move
 * in chunks by offset; malformed JSON-RPC gets -32700 / -32600. Against
 * `sandbox-desk mcp` (stdio) and `serve --mcp` (HTTP) with the SDK's own client, and a Docker sandbox.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cliIn, removeHome, startServe, tempHome, type ServeChild } from './serve-child.js';

type ToolResult = { isError?: boolean; content: { type: string; text?: string }[] };
const json = (r: ToolResult) => JSON.parse(r.content[0]!.text!) as Record<string, any>;
const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('MCP size limits and malformed JSON-RPC', () => {
  const home = tempHome('limits');
  const sb = `lim-${process.pid}`;
  let client: Client;
  let transport: StdioClientTransport;
  const call = async (name: string, args: Record<string, unknown>, c = client) =>
    (await c.callTool({ name, arguments: args }, undefined, { timeout: 120_000 })) as ToolResult;
  const errorOf = async (p: Promise<unknown>) => {
    try {
      const r = (await p) as ToolResult;
      return r.isError ? { code: 'tool', message: r.content[0]!.text! } : null;
    } catch (err) {
      return { code: (err as { code?: number }).code, message: (err as Error).message };
    }
  };

  beforeAll(async () => {
    const r = cliIn(home)(['sandbox', 'create', sb, '--backend', 'docker', '--json']);
    expect(r.status, r.stderr).toBe(0);
    client = new Client({ name: 'limits-test', version: '1.0.0' });
    transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp'],
      env: { ...(process.env as Record<string, string>), SANDBOX_DESK_HOME: home },
      stderr: 'pipe',
    });
    await client.connect(transport);
  });
  afterAll(async () => {
    await client?.close();
    cliIn(home)(['sandbox', 'rm', sb, '--force']);
    removeHome(home);
  });

  it('stdio: a 20 MiB write_file is answered with a JSON-RPC error (-32600), and the bridge keeps serving', async () => {
    const err = await errorOf(call('write_file', { sandbox: sb, path: '/tmp/huge', content: 'x'.repeat(20 * MiB) }));
    expect(err).toMatchObject({ code: -32600, message: expect.stringMatching(/larger than the 8 MiB this transport carries.*chunks/) });
    expect(transport.pid).not.toBeNull();
    expect(
      json(await call('execute_shell_command', { sandbox: sb, command: 'echo alive; test -e /tmp/huge || echo nothing-written' })).stdout,
    ).toBe('alive\nnothing-written\n');
  });

  it('stdio: the old 16 MiB maxBytes is refused with what to do instead, and the connection stays', async () => {
    await call('execute_shell_command', { sandbox: sb, command: 'head -c 15000000 /dev/urandom > /tmp/big15' });
    const err = await errorOf(call('read_file', { sandbox: sb, path: '/tmp/big15', maxBytes: 16 * MiB }));
    expect(err?.message).toMatch(/maxBytes is at most 2 MiB.*chunks with offset/);
    // A read's answer carries its content twice (text and structuredContent): 2 MiB per chunk, not a write's 4.
    expect((await errorOf(call('read_file', { sandbox: sb, path: '/tmp/big15', maxBytes: 4 * MiB })))?.message).toMatch(
      /maxBytes is at most 2 MiB/,
    );
    const whole = await call('read_file', { sandbox: sb, path: '/tmp/big15', maxBytes: 2 * MiB });
    expect(json(whole).error).toMatchObject({
      message: expect.stringMatching(/larger than the limit/),
      hint: expect.stringMatching(/offset 0, then nextOffset/),
    });
    expect((await client.listTools()).tools.length).toBeGreaterThan(10);
  });

  it('stdio: a 15 MB file read in chunks of 2 MiB by offset arrives whole', async () => {
    const inside = json(
      await call('execute_shell_command', { sandbox: sb, command: 'sha256sum /tmp/big15 | cut -d" " -f1' }),
    ).stdout.trim();
    const parts: Buffer[] = [];
    let offset: number | null = 0;
    let chunks = 0;
    while (offset !== null) {
      const r = json(await call('read_file', { sandbox: sb, path: '/tmp/big15', offset, maxBytes: 2 * MiB }));
      expect(r).toMatchObject({ size: 15_000_000, offset });
      parts.push(Buffer.from(r.content as string, r.encoding as BufferEncoding));
      offset = r.nextOffset as number | null;
      chunks++;
    }
    const got = Buffer.concat(parts);
    expect(chunks).toBe(8);
    expect(got.length).toBe(15_000_000);
    expect(sha(got)).toBe(inside);
    const past = await call('read_file', { sandbox: sb, path: '/tmp/big15', offset: 15_000_001 });
    expect(json(past).error.message).toMatch(/offset 15000001 is past the end/);
  });

  it('stdio: a 15 MB file written in chunks by offset arrives whole; a chunk out of order is refused', async () => {
    const data = randomBytes(15_000_000);
    for (let off = 0; off < data.length; off += 4 * MiB) {
      const r = json(
        await call('write_file', {
          sandbox: sb,
          path: '/tmp/up15',
          offset: off,
          encoding: 'base64',
          content: data.subarray(off, off + 4 * MiB).toString('base64'),
        }),
      );
      expect(r.size).toBe(Math.min(off + 4 * MiB, data.length));
    }
    expect(json(await call('execute_shell_command', { sandbox: sb, command: 'sha256sum /tmp/up15 | cut -d" " -f1' })).stdout.trim()).toBe(
      sha(data),
    );
    const gap = await call('write_file', { sandbox: sb, path: '/tmp/up15', offset: 10, content: 'x' });
    expect(json(gap).error.message).toMatch(/offset 10 is not the size of \/tmp\/up15 \(15000000 bytes\)/);
    const big = await call('write_file', {
      sandbox: sb,
      path: '/tmp/x',
      encoding: 'base64',
      content: randomBytes(4 * MiB + 1).toString('base64'),
    });
    expect(json(big).error.message).toMatch(/above the 4 MiB of one write_file/);
  });

  it('stdio, raw: -32700 for malformed JSON, -32600 for non-JSON-RPC, and every request is answered before exit at end of input', async () => {
    const child = spawn(process.execPath, [BIN, 'mcp'], {
      env: { ...process.env, SANDBOX_DESK_HOME: home },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const send = (v: unknown) => child.stdin.write((typeof v === 'string' ? v : JSON.stringify(v)) + '\n');
    send('{"jsonrpc": "2.0", "method": ');
    send({ jsonrpc: '2.0', id: 5 });
    send('[]');
    send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'execute_shell_command', arguments: { sandbox: sb, command: 'sleep 1; echo answered' } },
    });
    child.stdin.end();
    expect(await exited).toBe(0);
    const replies = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: unknown; error?: { code: number }; result?: { content: { text: string }[] } });
    expect(replies.slice(0, 3).map((r) => [r.id, r.error?.code])).toEqual([
      [null, -32700],
      [5, -32600],
      [null, -32600],
    ]);
    const answer = replies.find((r) => r.id === 2);
    expect(JSON.parse(answer!.result!.content[0]!.text).stdout).toBe('answered\n');
  });

  describe('over HTTP (serve --mcp)', () => {
    let s: ServeChild;
    beforeAll(async () => {
      s = await startServe(home);
    });
    afterAll(async () => {
      await s?.stop();
    });
    const post = (body: string | Uint8Array<ArrayBuffer>) =>
      fetch(s.mcpUrl, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${s.agentToken}`,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
        },
        body: typeof body === 'string' ? body : new Blob([body]),
      });

    it("bodies above 64 KiB are fine; above 8 MiB the answer is a JSON-RPC error with the request's id", async () => {
      const http = new Client({ name: 'limits-http', version: '1.0.0' });
      await http.connect(
        new StreamableHTTPClientTransport(new URL(s.mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${s.agentToken}` } } }),
      );
      const content = 'é'.repeat(100_000);
      expect(json(await call('write_file', { sandbox: sb, path: '/tmp/http200k', content }, http))).toMatchObject({ bytes: 200_000 });
      expect(json(await call('read_file', { sandbox: sb, path: '/tmp/http200k' }, http)).content).toBe(content);
      await http.close();

      const big = await post(
        JSON.stringify({
          jsonrpc: '2.0',
          method: 'tools/call',
          params: { name: 'write_file', arguments: { sandbox: sb, path: '/tmp/h', content: 'x'.repeat(9 * MiB) } },
          id: 77,
        }),
      );
      expect(big.status).toBe(413);
      expect(await big.json()).toMatchObject({
        jsonrpc: '2.0',
        id: 77,
        error: { code: -32600, message: expect.stringMatching(/larger than the 8 MiB/) },
      });
    });

    it('malformed JSON → -32700, not JSON-RPC → -32600, as JSON-RPC bodies', async () => {
      const bad = await post('{"jsonrpc":');
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
      for (const [body, id] of [
        ['[]', null],
        ['{"jsonrpc":"2.0","id":9}', 9],
        ['"x"', null],
        [new Uint8Array([0xff, 0xfe]), null],
      ] as const) {
        const r = await post(body);
        expect(r.status).toBe(400);
        const reply = (await r.json()) as { id: unknown; error: { code: number } };
        expect(reply.id).toBe(id);
        expect([-32600, -32700]).toContain(reply.error.code);
      }
    });
  });
});
