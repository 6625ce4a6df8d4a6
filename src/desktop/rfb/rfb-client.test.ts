import { describe, it, expect, afterEach } from 'vitest';
import { Event } from '../../shared/lifecycle.js';
import { decodePngSize, encodePng } from '../png-encode.js';
import { RfbClient } from './rfb-client.js';
import { fakeRfbServer, type FakeRfbServer, type FakeRfbServerOptions } from './test/fake-rfb-server.js';

const clients: RfbClient[] = [];
afterEach(() => {
  for (const c of clients.splice(0)) c.close();
});

async function connect(opts: Partial<FakeRfbServerOptions> = {}, encodings?: number[]) {
  const server = fakeRfbServer({ width: 16, height: 10, ...opts });
  const client = await RfbClient.connect(server.transport, { timeoutMs: 2000, ...(encodings ? { encodings } : {}) });
  clients.push(client);
  return { server, client };
}

/** RGBA of one pixel of the client's framebuffer. */
function pixel(client: RfbClient, x: number, y: number): number[] {
  const i = (y * client.width + x) * 4;
  return [...client.framebuffer().subarray(i, i + 4)];
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a).equals(Buffer.from(b));
}

/** The fake server's paint() sends an update unasked; wait until the client has applied it. */
async function paint(server: FakeRfbServer, client: RfbClient, ...rect: Parameters<FakeRfbServer['paint']>): Promise<void> {
  const updated = Event.toPromise(client.onUpdate);
  server.paint(...rect);
  await updated;
}

/** The bytes the client wrote, as one buffer. */
function sent(server: { received: Buffer[] }): Buffer {
  return Buffer.concat(server.received);
}

describe('RfbClient handshake', () => {
  it('connects to a 3.8 server, reads ServerInit and sends pixel format and encodings', async () => {
    const { server, client } = await connect({ width: 32, height: 20, name: 'Xvnc desk' });
    expect([client.width, client.height, client.name]).toEqual([32, 20, 'Xvnc desk']);
    await new Promise((r) => setImmediate(r));
    const bytes = sent(server);
    expect(bytes.toString('latin1', 0, 12)).toBe('RFB 003.008\n');
    expect([...bytes.subarray(12, 14)]).toEqual([1, 1]); // security None, ClientInit shared
    const pixelFormat = bytes.subarray(14, 34);
    expect([...pixelFormat]).toEqual([0, 0, 0, 0, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0]);
    expect(server.encodings).toEqual([0, 1, -223, -308, -224]);
    expect(client.framebuffer().length).toBe(32 * 20 * 4);
  });

  it('speaks 3.3 to a 3.3 server (no security choice is sent)', async () => {
    const { server, client } = await connect({ version: '3.3' });
    expect(client.width).toBe(16);
    const bytes = sent(server);
    expect(bytes.toString('latin1', 0, 12)).toBe('RFB 003.003\n');
    expect(bytes[12]).toBe(1); // straight to ClientInit
    expect(bytes[13]).toBe(0); // then SetPixelFormat
  });

  it('speaks 3.7 to a 3.7 server (no SecurityResult for None)', async () => {
    const { client } = await connect({ version: '3.7', name: 'seven' });
    expect(client.name).toBe('seven');
  });

  it('rejects clearly when the server does not offer security type None', async () => {
    await expect(RfbClient.connect(fakeRfbServer({ width: 4, height: 4, offerNone: false }).transport)).rejects.toThrow(
      'RFB server offers security types [2] but not None (1)',
    );
    await expect(RfbClient.connect(fakeRfbServer({ width: 4, height: 4, version: '3.3', offerNone: false }).transport)).rejects.toThrow(
      /requires security type 2/,
    );
  });

  it("rejects with the server's failure reason", async () => {
    const server = fakeRfbServer({ width: 4, height: 4, refuseReason: 'Too many security failures' });
    await expect(RfbClient.connect(server.transport)).rejects.toThrow('RFB server refused the connection: Too many security failures');
  });

  it('rejects when the server closes mid-handshake', async () => {
    const server = fakeRfbServer({ width: 4, height: 4, behaviour: 'close-after-version' });
    await expect(RfbClient.connect(server.transport)).rejects.toThrow('RFB server closed the connection during the handshake');
  });

  it('rejects on timeout and closes the transport', async () => {
    const server = fakeRfbServer({ width: 4, height: 4, behaviour: 'silent' });
    const started = Date.now();
    await expect(RfbClient.connect(server.transport, { timeoutMs: 50 })).rejects.toThrow('RFB handshake timed out after 50 ms');
    expect(Date.now() - started).toBeLessThan(1000);
    expect(server.clientClosed).toBe(true);
  });

  it('rejects something that is not an RFB server', async () => {
    const server = fakeRfbServer({ width: 4, height: 4, behaviour: 'silent' });
    server.sendRaw(Buffer.from('SSH-2.0-OpenSSH_9.6\r\n'));
    await expect(RfbClient.connect(server.transport)).rejects.toThrow(/not an RFB server/);
  });
});

describe('RfbClient framebuffer updates', () => {
  it('takes a screenshot whose PNG has the screen size and shows a painted rectangle', async () => {
    const { server, client } = await connect({ width: 20, height: 12 });
    await paint(server, client, 0, 0, 20, 12, [10, 20, 30]);
    await paint(server, client, 3, 4, 5, 2, [255, 0, 0]);
    const png = await client.screenshot();
    expect(decodePngSize(png)).toEqual({ width: 20, height: 12 });
    expect(sameBytes(client.framebuffer(), server.rgba())).toBe(true);
    expect(png.equals(encodePng(20, 12, client.framebuffer()))).toBe(true);
    expect(pixel(client, 3, 4)).toEqual([255, 0, 0, 255]);
    expect(pixel(client, 7, 5)).toEqual([255, 0, 0, 255]);
    expect(pixel(client, 8, 5)).toEqual([10, 20, 30, 255]);
    expect(pixel(client, 3, 6)).toEqual([10, 20, 30, 255]);
  });

  it('waits for the pixels, not the layout-only update a server sends before them', async () => {
    const { server, client } = await connect({ width: 8, height: 6, fill: [0, 128, 255] });
    const png = await client.screenshot();
    expect(client.stats.updates).toBe(2); // ExtendedDesktopSize alone, then the Raw rects
    expect(pixel(client, 7, 5)).toEqual([0, 128, 255, 255]);
    expect(png.equals(encodePng(8, 6, server.rgba()))).toBe(true);
  });

  it('parses everything when the server output arrives one byte at a time', async () => {
    const { server, client } = await connect({ width: 9, height: 7, chunkSize: 1, name: 'chunky' });
    expect(client.name).toBe('chunky');
    await paint(server, client, 1, 1, 4, 3, [1, 2, 3]);
    await paint(server, client, 6, 2, 3, 5, [200, 100, 50]);
    await client.screenshot();
    expect(sameBytes(client.framebuffer(), server.rgba())).toBe(true);
  });

  it('parses everything when the server output arrives in random small chunks', async () => {
    const { server, client } = await connect({ width: 13, height: 11, chunkSize: 'random' });
    // Sent back to back, so several updates share chunks.
    for (let i = 0; i < 5; i++) server.paint(i, i * 2, 7, 3, [i * 40, 255 - i * 40, 7]);
    server.copyRect(0, 0, 5, 5, 6, 4);
    while (client.stats.updates < 6) await Event.toPromise(client.onUpdate);
    await client.screenshot();
    expect(sameBytes(client.framebuffer(), server.rgba())).toBe(true);
  });

  it('applies CopyRect, including overlapping copies in both directions', async () => {
    const { server, client } = await connect({ width: 12, height: 12 });
    // Horizontal stripes, so a copy done in the wrong row order would visibly smear.
    for (let y = 0; y < 12; y++) await paint(server, client, 0, y, 12, 1, [y * 20, 255 - y * 20, (y * 77) & 0xff]);
    const copies: [number, number, number, number, number, number][] = [
      [0, 0, 2, 3, 8, 8], // down and right, overlapping
      [2, 3, 1, 0, 9, 9], // up and left, overlapping
      [0, 0, 6, 0, 6, 12], // side by side on the same rows
    ];
    for (const [sx, sy, dx, dy, w, h] of copies) {
      const updated = Event.toPromise(client.onUpdate);
      server.copyRect(sx, sy, dx, dy, w, h);
      await updated;
      expect(sameBytes(client.framebuffer(), server.rgba()), `copy ${[sx, sy, dx, dy, w, h].join()}`).toBe(true);
    }
  });

  it('ends an update early at LastRect', async () => {
    const { server, client } = await connect({ width: 6, height: 4 });
    await paint(server, client, 0, 0, 6, 4, [9, 9, 9]);
    const updated = Event.toPromise(client.onUpdate);
    server.fullUpdate({ lastRect: true });
    await updated;
    expect(client.stats.updates).toBe(2);
    expect(client.stats.rects).toBe(3); // LastRect itself is not counted
    expect(sameBytes(client.framebuffer(), server.rgba())).toBe(true);
  });

  it('follows a DesktopSize change', async () => {
    const { server, client } = await connect({ width: 16, height: 10 });
    const resized = Event.toPromise(client.onResize);
    server.desktopSize(40, 30);
    expect(await resized).toEqual({ width: 40, height: 30 });
    expect([client.width, client.height]).toEqual([40, 30]);
    expect(client.framebuffer().length).toBe(40 * 30 * 4);
    await paint(server, client, 30, 20, 10, 10, [0, 0, 255]);
    expect(pixel(client, 39, 29)).toEqual([0, 0, 255, 255]);
  });

  it('resolves requestUpdate only for an update that starts after the request', async () => {
    const { server, client } = await connect({ width: 8, height: 8, chunkSize: 1 });
    server.paint(0, 0, 8, 8, [50, 60, 70]);
    // Let the unsolicited update start arriving, then ask: the answer must be a later update.
    await new Promise((r) => setTimeout(r, 5));
    await client.requestUpdate(false);
    expect(client.stats.updates).toBe(3); // the painted one, then the answer's layout-only and pixel updates
  });

  it('rejects requestUpdate when no update arrives in time', async () => {
    const { client } = await connect();
    await client.requestUpdate(false);
    // The fake server, like a real one, does not answer an incremental request while nothing changes.
    await expect(client.requestUpdate(true, 50)).rejects.toThrow('no FramebufferUpdate from the RFB server within 50 ms');
  });

  it('counts updates, rects and bytes after the handshake', async () => {
    const { server, client } = await connect();
    expect(client.stats).toEqual({ updates: 0, rects: 0, bytes: 0 });
    await paint(server, client, 0, 0, 4, 4, [1, 1, 1]);
    expect(client.stats).toEqual({ updates: 1, rects: 1, bytes: 4 + 12 + 4 * 4 * 4 });
    await paint(server, client, 0, 0, 2, 1, [1, 1, 1]);
    expect(client.stats).toEqual({ updates: 2, rects: 2, bytes: 80 + 4 + 12 + 8 });
  });

  it('skips colour map, fence, end-of-continuous-updates and extended clipboard; reports bell and cut text', async () => {
    const { server, client } = await connect({ width: 4, height: 4, chunkSize: 'random' });
    const bell = Event.toPromise(client.onBell);
    const cut = Event.toPromise(client.onCutText);
    const colourMap = Buffer.from([1, 0, 0, 0, 0, 2, ...new Array(12).fill(7)]);
    const fence = Buffer.from([248, 0, 0, 0, 0, 0, 0, 0, 3, 9, 9, 9]); // pad, flags, length 3, payload
    const text = Buffer.from('héllo', 'latin1');
    const cutText = Buffer.concat([Buffer.from([3, 0, 0, 0, 0, 0, 0, text.length]), text]);
    const extendedClipboard = Buffer.from([3, 0, 0, 0, 0xff, 0xff, 0xff, 0xfb, 1, 2, 3, 4, 5]); // length -5
    server.sendRaw(Buffer.concat([colourMap, Buffer.from([2]), fence, Buffer.from([150]), cutText, extendedClipboard]));
    await paint(server, client, 1, 1, 2, 2, [0, 255, 0]);
    await bell;
    expect(await cut).toEqual('héllo');
    expect(pixel(client, 2, 2)).toEqual([0, 255, 0, 255]);
  });
});

describe('RfbClient failures', () => {
  it('fails clearly on an unknown message type', async () => {
    const { server, client } = await connect();
    await client.screenshot(); // so the incremental request below stays unanswered
    const closed = Event.toPromise(client.onClose);
    const pending = client.requestUpdate(true);
    server.sendRaw(Buffer.from([99]));
    const err = (await closed)!;
    expect(err.message).toBe('unknown RFB server message type 99');
    await expect(pending).rejects.toThrow('unknown RFB server message type 99');
    expect(server.clientClosed).toBe(true);
  });

  it('fails clearly on an encoding it did not ask for', async () => {
    const { server, client } = await connect();
    const closed = Event.toPromise(client.onClose);
    server.sendRaw(Buffer.from([0, 0, 0, 1, 0, 0, 0, 0, 0, 4, 0, 4, 0, 0, 0, 7])); // one Tight rect
    const err = (await closed)!;
    expect(err.message).toMatch(/unsupported RFB encoding 7/);
  });

  it('fails clearly on a rect outside the framebuffer', async () => {
    const { server, client } = await connect({ width: 4, height: 4 });
    const closed = Event.toPromise(client.onClose);
    server.sendRaw(Buffer.from([0, 0, 0, 1, 0, 2, 0, 0, 0, 4, 0, 1, 0, 0, 0, 0]));
    const err = (await closed)!;
    expect(err.message).toMatch(/Raw rect 4x1\+2\+0 lies outside the 4x4 framebuffer/);
  });

  it('reports the server hanging up and rejects what was pending', async () => {
    const { server, client } = await connect();
    await client.screenshot(); // so the incremental request below stays unanswered
    const closed = Event.toPromise(client.onClose);
    const pending = client.requestUpdate(true);
    server.close();
    const err = (await closed)!;
    expect(err.message).toBe('RFB server closed the connection');
    await expect(pending).rejects.toThrow('RFB server closed the connection');
    await expect(client.screenshot()).rejects.toThrow('RFB client is closed');
  });

  it('close() rejects pending requests, closes the transport and emits close without an error', async () => {
    const { server, client } = await connect();
    await client.screenshot(); // so the incremental request below stays unanswered
    const closed = Event.toPromise(client.onClose);
    const pending = client.requestUpdate(true);
    client.close();
    expect(await closed).toBeUndefined();
    await expect(pending).rejects.toThrow('RFB client is closed');
    expect(server.clientClosed).toBe(true);
  });
});

describe('RfbClient input', () => {
  it('sends PointerEvent and KeyEvent bytes exactly', async () => {
    const { server, client } = await connect();
    client.pointer(10, 300, 1);
    expect([...server.received.at(-1)!]).toEqual([5, 1, 0, 10, 1, 44]);
    client.pointer(-5, 70000.4, 0);
    expect([...server.received.at(-1)!]).toEqual([5, 0, 0, 0, 0xff, 0xff]);
    client.key(0xff0d, true);
    expect([...server.received.at(-1)!]).toEqual([4, 1, 0, 0, 0, 0, 0xff, 0x0d]);
    client.key(0x61, false);
    expect([...server.received.at(-1)!]).toEqual([4, 0, 0, 0, 0, 0, 0, 0x61]);
  });
});

describe('RfbClient resize', () => {
  it('sends SetDesktopSize with the server screen and resolves with the new size', async () => {
    const { server, client } = await connect({ width: 16, height: 10, screenId: 0x1234 });
    await client.screenshot();
    const resized = Event.toPromise(client.onResize);
    await client.resize(50, 40);
    expect(await resized).toEqual({ width: 50, height: 40 });
    expect([client.width, client.height]).toEqual([50, 40]);
    expect(server.resizeRequests).toEqual([
      { width: 50, height: 40, screens: [{ id: 0x1234, x: 0, y: 0, width: 50, height: 40, flags: 0 }] },
    ]);
    await paint(server, client, 45, 35, 5, 5, [1, 2, 3]);
    expect(sameBytes(client.framebuffer(), server.rgba())).toBe(true);
  });

  it('settles each resize with the answer to its own request, not an interim or earlier report', async () => {
    const { server, client } = await connect({ width: 16, height: 10, chunkSize: 'random' });
    await client.screenshot();
    await client.resize(50, 40);
    await client.resize(30, 20);
    expect([client.width, client.height]).toEqual([30, 20]);
    expect(server.resizeRequests.map((r) => [r.width, r.height])).toEqual([
      [50, 40],
      [30, 20],
    ]);
  });

  it('asks for an update first when no ExtendedDesktopSize has been seen yet', async () => {
    const { client } = await connect({ chunkSize: 'random' });
    await client.resize(20, 20);
    expect([client.width, client.height]).toEqual([20, 20]);
  });

  it("rejects with the server's reason when the resize is refused", async () => {
    const { client } = await connect({ width: 16, height: 10, refuseResize: true });
    await expect(client.resize(50, 40)).rejects.toThrow(
      'RFB server refused the resize to 50x40: resize is administratively prohibited (status 1)',
    );
    expect([client.width, client.height]).toEqual([16, 10]);
  });

  it('rejects when the server never announced ExtendedDesktopSize', async () => {
    const { client } = await connect({}, [0, 1]);
    await expect(client.resize(50, 40)).rejects.toThrow(/has not announced ExtendedDesktopSize/);
  });

  it('rejects invalid sizes', async () => {
    const { client } = await connect();
    await expect(client.resize(0, 40)).rejects.toThrow(RangeError);
  });
});

describe('RfbClient: live-connection helpers', () => {
  it('sync() resolves after the server answered a fence sent after earlier input', async () => {
    const { server, client } = await connect();
    client.pointer(3, 4, 0);
    await client.sync(1000);
    const bytes = sent(server);
    // The pointer event precedes the fence on the wire.
    expect(bytes.indexOf(Buffer.from([5, 0, 0, 3, 0, 4]))).toBeGreaterThan(-1);
    expect(bytes.lastIndexOf(248)).toBeGreaterThan(bytes.indexOf(Buffer.from([5, 0, 0, 3, 0, 4])));
  });

  it('sync() rejects when the connection closes first', async () => {
    const { client } = await connect();
    const pending = client.sync(1000);
    client.close();
    await expect(pending).rejects.toThrow(/closed/);
  });

  it('onDamage reports the areas an update painted', async () => {
    const { server, client } = await connect();
    const damage = Event.toPromise(client.onDamage);
    server.paint(2, 3, 4, 5, [255, 0, 0]);
    expect(await damage).toEqual([{ x: 2, y: 3, width: 4, height: 5 }]);
  });
});
