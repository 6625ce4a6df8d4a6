import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { LimitedStdioTransport } from './stdio-transport.js';

function setup(maxBytes = 1000) {
  const input = new PassThrough();
  const output = new PassThrough();
  const t = new LimitedStdioTransport(input, output, maxBytes);
  const got: unknown[] = [];
  const sent: Record<string, any>[] = [];
  t.onmessage = (m) => got.push(m);
  output.on('data', (c: Buffer) => {
    for (const line of c.toString().split('\n').filter(Boolean)) sent.push(JSON.parse(line) as Record<string, any>);
  });
  return { t, input, got, sent };
}
const tick = () => new Promise((r) => setImmediate(r));

describe('MCP over stdio, within its limits', () => {
  it('passes JSON-RPC messages through, across chunk boundaries', async () => {
    const { t, input, got } = setup();
    await t.start();
    const line = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) + '\n';
    input.write(line.slice(0, 10));
    input.write(line.slice(10) + JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
    await tick();
    expect(got).toEqual([
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
    ]);
  });

  it('a message above the limit gets -32600 with its id (read from either end) and the connection stays', async () => {
    const { t, input, got, sent } = setup(1000);
    let closed = false;
    t.onclose = () => (closed = true);
    await t.start();
    const big = JSON.stringify({ method: 'tools/call', params: { content: 'x'.repeat(5000) }, jsonrpc: '2.0', id: 7 });
    for (let i = 0; i < big.length; i += 333) input.write(big.slice(i, i + 333));
    input.write('\n' + JSON.stringify({ jsonrpc: '2.0', id: 'a', params: { c: 'y'.repeat(3000) }, method: 'x' }) + '\n');
    input.write(JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'ping' }) + '\n');
    await tick();
    expect(sent[0]).toMatchObject({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32600, message: expect.stringMatching(/larger than the 1000 bytes/), data: { limit: 1000, size: big.length } },
    });
    expect(sent[1]).toMatchObject({ id: 'a', error: { code: -32600 } });
    expect(got).toEqual([{ jsonrpc: '2.0', id: 8, method: 'ping' }]);
    expect(closed).toBe(false);
  });

  it('malformed JSON → -32700, JSON that is not JSON-RPC → -32600 (with its id when it has one)', async () => {
    const { t, input, got, sent } = setup();
    await t.start();
    input.write('{"jsonrpc":"2.0",\n[]\n{"jsonrpc":"1.0","id":3,"method":"x"}\n42\n\n');
    await tick();
    expect(sent.map((s) => [s.id, s.error.code])).toEqual([
      [null, -32700],
      [null, -32600],
      [3, -32600],
      [null, -32600],
    ]);
    expect(got).toEqual([]);
  });

  it('never sends above the limit: a too-large answer becomes an error for the same id; idle() waits for answers', async () => {
    const { t, input, sent } = setup(500);
    await t.start();
    input.write(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call' }) + '\n');
    await tick();
    let idle = false;
    void t.idle().then(() => (idle = true));
    await tick();
    expect(idle).toBe(false);
    await t.send({ jsonrpc: '2.0', id: 9, result: { content: [{ type: 'text', text: 'z'.repeat(2000) }] } });
    await tick();
    expect(sent[0]).toMatchObject({ id: 9, error: { code: -32603, message: expect.stringMatching(/larger than the 500 bytes/) } });
    expect(idle).toBe(true);
  });

  it('takes the ids JSON-RPC 2.0 allows (null, 1.5) and answers with them; refuses others with -32600 (issue 35)', async () => {
    const { t, input, got, sent } = setup();
    await t.start();
    for (const id of [null, 1.5, { x: 1 }, false, [2]]) input.write(JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' }) + '\n');
    await tick();
    // The protocol sees ids the SDK can carry; each answer goes out with the client's own id.
    expect(got).toHaveLength(2);
    for (const m of got as { id: unknown }[]) expect(m.id).toMatch(/^sandbox-desk-id-alias:/);
    for (const m of [...(got as { id: string }[])].reverse()) await t.send({ jsonrpc: '2.0', id: m.id, result: {} });
    expect(sent.slice(0, 3).map((s) => [s.id, s.error?.message])).toEqual([
      [null, expect.stringMatching(/the id is an object .*a JSON-RPC 2\.0 id is a string, a number or null/)],
      [null, expect.stringMatching(/the id is a boolean \(false\)/)],
      [null, expect.stringMatching(/the id is an array \(\[2\]\)/)],
    ]);
    expect(sent.slice(3)).toEqual([
      { jsonrpc: '2.0', id: 1.5, result: {} },
      { jsonrpc: '2.0', id: null, result: {} },
    ]);
    let idle = false;
    await t.idle().then(() => (idle = true));
    expect(idle).toBe(true);
  });
});
