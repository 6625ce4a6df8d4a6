import { describe, it, expect, afterEach } from 'vitest';
import { Event } from '../../shared/lifecycle.js';
import { RfbClient } from './rfb-client.js';
import { fakeRfbServer, type FakeRfbServerOptions } from './test/fake-rfb-server.js';

// The client as a state machine (protocol-version → … → connected → disconnected, final); its
// protocol behaviour is in rfb-client.test.ts.

const clients: RfbClient[] = [];
afterEach(() => {
  for (const c of clients.splice(0)) c.close();
});

async function connect(opts: Partial<FakeRfbServerOptions> = {}) {
  const server = fakeRfbServer({ width: 16, height: 10, ...opts });
  const client = await RfbClient.connect(server.transport, { timeoutMs: 2000 });
  clients.push(client);
  return { server, client };
}

describe('RfbClient state machine', () => {
  it('is connected once connect resolves and disconnected after close, announcing the move', async () => {
    const { client } = await connect();
    expect(client.state).toBe('connected');
    const moves: string[] = [];
    client.onDidChangeState(({ from, to }) => moves.push(`${from} → ${to}`));
    client.close();
    expect(client.state).toBe('disconnected');
    expect(moves).toEqual(['connected → disconnected']);
  });

  it('rejects a server of another major version, naming it, and closes the transport', async () => {
    const server = fakeRfbServer({ width: 4, height: 4, behaviour: 'silent' });
    server.sendRaw(Buffer.from('RFB 004.001\n', 'latin1'));
    await expect(RfbClient.connect(server.transport)).rejects.toThrow('unsupported RFB protocol version 4.1');
    expect(server.clientClosed).toBe(true);
  });

  it('rejects with the reason of a failed SecurityResult (3.8), even when it arrives a byte at a time', async () => {
    for (const chunkSize of [undefined, 1] as const) {
      const server = fakeRfbServer({ width: 4, height: 4, securityFailure: 'Authentication failure', ...(chunkSize ? { chunkSize } : {}) });
      await expect(RfbClient.connect(server.transport)).rejects.toThrow('RFB security handshake failed: Authentication failure');
      expect(server.clientClosed).toBe(true);
    }
  });

  it('treats disconnected as final: later bytes are ignored, nothing fires again, calls are refused', async () => {
    const { server, client } = await connect();
    await client.screenshot();
    let updates = 0;
    const closes: (Error | undefined)[] = [];
    client.onUpdate(() => updates++);
    client.onClose((err) => closes.push(err));
    client.dispose();
    server.paint(0, 0, 4, 4, [1, 2, 3]);
    server.sendRaw(Buffer.from([99])); // would be a protocol error if it were still parsed
    await new Promise((r) => setTimeout(r, 30));
    client.dispose();
    client.close();
    expect(client.state).toBe('disconnected');
    expect(updates).toBe(0);
    expect(closes).toEqual([undefined]);
    await expect(client.requestUpdate(false)).rejects.toThrow('RFB client is closed');
    await expect(client.resize(8, 8)).rejects.toThrow('RFB client is closed');
  });

  it('stops parsing at once when a listener disposes the client in the middle of a chunk', async () => {
    const { server, client } = await connect();
    client.onUpdate(() => client.dispose());
    const closed = Event.toPromise(client.onClose);
    // Two updates back to back arrive in one chunk; only the first may be applied.
    server.sendRaw(Buffer.concat([Buffer.from([0, 0, 0, 0]), Buffer.from([0, 0, 0, 0])]));
    expect(await closed).toBeUndefined();
    expect(client.stats.updates).toBe(1);
    expect(client.state).toBe('disconnected');
  });

  it('reports a server hang-up once, with the reason, and stays disconnected', async () => {
    const { server, client } = await connect();
    const closes: (Error | undefined)[] = [];
    client.onClose((err) => closes.push(err));
    server.close();
    await new Promise((r) => setTimeout(r, 30));
    client.close();
    expect(closes.map((e) => e?.message)).toEqual(['RFB server closed the connection']);
    expect(client.state).toBe('disconnected');
  });
});
