/**
 * The desktop's clipboard both ways through the real screen stream (ticketed WebSocket → RFB filter →
 * exec relay → TigerVNC's Xvnc) and xclip inside a real desktop sandbox: the lease holder's
 * ClientCutText lands in the X clipboard, a viewer without the lease pastes nothing, a paste over the
 * cap closes the stream, and text copied inside reaches a viewer as ServerCutText.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { STREAM_CLOSE } from '../../src/api/contract.js';
import { LocalServer } from '../../src/api/local-server.js';
import { clientCutText } from '../../src/desktop/rfb/client-messages.js';
import { RfbClient } from '../../src/desktop/rfb/rfb-client.js';
import type { ByteTransport } from '../../src/desktop/rfb/transport.js';
import { DEFAULT_CONFIG } from '../../src/platform/config.js';
import { rejectsWith } from '../expect-error.js';
import { callApi, tempDesk, uniqueName, type TestDesk } from './helpers.js';

/** A WebSocket as the RFB client's byte pipe (what noVNC does in the window). */
function wsTransport(ws: WebSocket): ByteTransport {
  return {
    write: (c) => ws.send(c, { binary: true }),
    onData: (l) => ws.on('message', (d: Buffer) => l(d)),
    onClose: (l) => ws.on('close', () => l()),
    close: () => ws.close(),
  };
}

async function until<T>(what: string, probe: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  let last: T | undefined;
  for (let i = 0; i < 150; i++) {
    last = await probe();
    if (ok(last)) return last;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what}: still ${JSON.stringify(last)}`);
}

describe('clipboard both ways (real desktop sandbox, xclip inside)', () => {
  let t: TestDesk;
  let server: LocalServer;
  const sb = uniqueName('clip');
  // Past the 64 KiB a contract call's body used to stop at (issue 35), so the API test below shows it.
  const maxBytes = 256 * 1024;
  const viewers: WebSocket[] = [];

  const viewer = async (viewerId: string) => {
    const grant = (await server.call('screenTicket', { sandbox: sb, viewerId })) as { ok: { url: string; clipboardMaxBytes: number } };
    expect(grant.ok.clipboardMaxBytes).toBe(maxBytes);
    const ws = new WebSocket(grant.ok.url);
    viewers.push(ws);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const rfb = await RfbClient.connect(wsTransport(ws));
    return { ws, rfb };
  };

  beforeAll(async () => {
    t = tempDesk({ config: { ...DEFAULT_CONFIG, clipboard: { maxBytes } } });
    server = new LocalServer({ desk: t.desk });
    await server.listen();
    await t.desk.createSandbox({ name: sb, backend: 'docker', image: 'sandbox-desk/desktop:latest' });
    await t.desk.desktop.start(sb, { geometry: '800x600' });
  }, 240_000);
  afterAll(async () => {
    for (const ws of viewers) ws.terminate();
    await server?.close();
    await t?.dispose();
  }, 120_000);

  it('the lease holder pastes into the sandbox; a viewer without the lease does not', async () => {
    await t.desk.desktop.setClipboard(sb, 'before', maxBytes);
    const holder = await viewer('holder1');
    const watcher = await viewer('watcher1');
    await t.desk.desktop.takeControl(sb, 'holder1');
    // The watcher's paste is dropped by the filter. Xvnc answers a connection's messages in order, so
    // once the update asked for after it has come back, the paste would have landed if it had passed.
    watcher.ws.send(clientCutText('from the watcher'), { binary: true });
    await watcher.rfb.requestUpdate(false);
    expect(await t.desk.desktop.clipboard(sb, maxBytes)).toBe('before');
    holder.ws.send(clientCutText('from the window ü'), { binary: true });
    const got = await until(
      'sandbox clipboard',
      () => t.desk.desktop.clipboard(sb, maxBytes),
      (v) => v === 'from the window ü',
    );
    expect(got).toBe('from the window ü');
    expect(watcher.ws.readyState).toBe(WebSocket.OPEN);
  }, 120_000);

  it('text copied inside the sandbox reaches a viewer as ServerCutText; the API reads and sets it', async () => {
    const v = await viewer('reader1');
    const seen: string[] = [];
    v.rfb.onCutText((text) => seen.push(text));
    await t.desk.desktop.giveBack(sb, 'holder1');
    expect(await t.desk.desktop.setClipboard(sb, 'copied inside', maxBytes)).toBe(13);
    await until(
      'ServerCutText',
      async () => seen,
      (s) => s.includes('copied inside'),
    );
    const r = (await server.call('desktopClipboard', { sandbox: sb })) as { ok: { text: string } };
    expect(r.ok.text).toBe('copied inside');
  }, 120_000);

  it('desktopClipboard over the real HTTP API carries text up to clipboard.maxBytes both ways, past 64 KiB (issue 35)', async () => {
    // Exactly maxBytes of UTF-8, with a control character JSON spells in six bytes and two-byte letters.
    const unit = 'line ü\u0001\n';
    const unitBytes = Buffer.byteLength(unit);
    const text = unit.repeat(Math.floor(maxBytes / unitBytes)) + 'x'.repeat(maxBytes % unitBytes);
    expect(Buffer.byteLength(text)).toBe(maxBytes);
    expect(await callApi(server, 'desktopClipboard', { sandbox: sb, text })).toMatchObject({ bytes: maxBytes });
    const back = await callApi<{ text: string; bytes: number }>(server, 'desktopClipboard', { sandbox: sb });
    expect(back.bytes).toBe(maxBytes);
    expect(back.text === text).toBe(true);
    // One byte more is refused by the clipboard's own limit, with what to do — not by the body's size.
    await expect(callApi(server, 'desktopClipboard', { sandbox: sb, text: text + 'y' })).rejects.toThrow(
      new RegExp(`${maxBytes + 1} bytes, over the limit of ${maxBytes}`),
    );
    // The next test checks that a refused paste leaves the clipboard as the test before left it.
    await callApi(server, 'desktopClipboard', { sandbox: sb, text: 'copied inside' });
  }, 120_000);

  it('over the cap: the API refuses with the limit named, a paste closes that viewer’s stream', async () => {
    const big = 'x'.repeat(maxBytes + 1);
    const e = await rejectsWith(t.desk.desktop.setClipboard(sb, big, maxBytes), 'invalid_input');
    expect(e.message).toMatch(new RegExp(`${maxBytes + 1} bytes, over the limit of ${maxBytes}`));
    expect(e.hint).toMatch(/clipboard\.maxBytes/);
    const v = await viewer('paster1');
    await t.desk.desktop.takeControl(sb, 'paster1');
    const closed = new Promise<number>((resolve) => v.ws.once('close', (code) => resolve(code)));
    v.ws.send(clientCutText(big), { binary: true });
    expect(await closed).toBe(STREAM_CLOSE.protocolError);
    expect(await t.desk.desktop.clipboard(sb, maxBytes)).toBe('copied inside');
  }, 120_000);

  it('setting the clipboard is refused while a human holds control', async () => {
    await t.desk.desktop.takeControl(sb, 'holder2');
    await rejectsWith(t.desk.desktop.setClipboard(sb, 'agent text', maxBytes), 'human_has_control');
  }, 60_000);
});
