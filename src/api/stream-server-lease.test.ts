/**
 * The control lease and the screen stream's end (issue 35, item 6): only the viewer's own leaving hands
 * the screen back. The screen going away under the viewer — a restore, a restart or kill of the
 * sandbox, the desktop stopped, its relay killed: all things an agent token or the sandbox can cause —
 * ends the stream from the server's side and must leave the person in control. The relay is faked
 * (the boundary: an exec into a sandbox); the server, the tickets, the WebSocket and the lease store
 * are the real ones.
 */
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import type { DesktopStream } from '../desktop/desktop-stream.js';
import { LocalProvider } from '../sandbox/local/local-provider.js';
import { ProviderRegistry } from '../sandbox/registry.js';
import { CLOSE } from '../shared/stream-close-codes.js';
import { LocalServer } from './local-server.js';
import { SandboxDesk } from './sandbox-desk.js';

/** A screen relay as DesktopService hands it out: RFB bytes on stdout/stdin, 'close' when it ends. */
class FakeRelay extends EventEmitter implements DesktopStream {
  readonly stdout = new PassThrough();
  readonly stdin = new PassThrough();
  /** The server ended it: its 'close' handler for the viewer has run. */
  killed = false;
  kill(): boolean {
    if (this.killed) return false;
    this.killed = true;
    queueMicrotask(() => this.emit('close'));
    return true;
  }
}

let dir: string;
let desk: SandboxDesk;
let server: LocalServer;
const sb = 'lease-sb';
const relays: FakeRelay[] = [];
/** While set, a relay being opened waits for it (an exec that takes its time). */
let opening: Promise<void> | null = null;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sdesk-stream-lease-'));
  const registry = new ProviderRegistry();
  registry.registerBuiltin(new LocalProvider());
  desk = new SandboxDesk({ dataDir: dir, registry, plugins: false });
  await desk.createSandbox({ name: sb, backend: 'local' });
  vi.spyOn(desk.desktop, 'openScreenStream').mockImplementation(async () => {
    const r = new FakeRelay();
    relays.push(r);
    await opening;
    return r;
  });
  server = new LocalServer({ desk });
  await server.listen();
});
afterAll(async () => {
  await server.close();
  await desk.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A viewer's screen stream with its own viewer id; resolves once the server has opened the relay. */
async function openViewer(viewerId: string): Promise<{ ws: WebSocket; relay: FakeRelay; closed: Promise<number> }> {
  const before = relays.length;
  const r = (await server.call('screenTicket', { sandbox: sb, viewerId })) as { ok: { url: string } };
  const ws = new WebSocket(r.ok.url);
  const closed = new Promise<number>((res) => ws.on('close', (code) => res(code)));
  await new Promise<void>((res, rej) => {
    ws.once('open', () => res());
    ws.once('error', rej);
  });
  await vi.waitFor(() => expect(relays.length).toBe(before + 1));
  return { ws, relay: relays[before]!, closed };
}

describe('the screen stream ending and the lease', () => {
  it('the screen going away (the server closes the stream) keeps the person in control; their reconnect finds it theirs', async () => {
    const viewer = 'person-1';
    const v = await openViewer(viewer);
    expect(await desk.desktop.takeControl(sb, viewer)).toMatchObject({ holder: 'human', viewerId: viewer });
    // What a restore, `docker kill`, a desktop stop or a killed relay look like from here.
    v.relay.emit('close');
    expect(await v.closed).toBe(CLOSE.streamGone);
    await vi.waitFor(() => expect(v.relay.killed).toBe(true));
    expect(desk.desktop.lease(sb)).toMatchObject({ holder: 'human', viewerId: viewer });
    await expect(desk.desktop.act(sb, { kind: 'click', x: 1, y: 1 })).rejects.toMatchObject({ code: 'human_has_control' });

    // The viewer comes back with the same id (as the window does) and leaves on purpose: today's rule.
    const again = await openViewer(viewer);
    expect(desk.desktop.lease(sb)).toMatchObject({ holder: 'human', viewerId: viewer });
    again.ws.close();
    await again.closed;
    await vi.waitFor(() => expect(desk.desktop.lease(sb)).toMatchObject({ holder: 'agent', viewerId: null }));
  });

  it("a holder's dropped link (no close frame) keeps control; a watcher closing gives back nothing it did not hold", async () => {
    const holder = 'person-2';
    const watcher = 'watcher-2';
    const h = await openViewer(holder);
    const w = await openViewer(watcher);
    await desk.desktop.takeControl(sb, holder);
    w.ws.close();
    await w.closed;
    h.ws.terminate();
    await h.closed;
    await vi.waitFor(() => expect(h.relay.killed && w.relay.killed).toBe(true));
    expect(desk.desktop.lease(sb)).toMatchObject({ holder: 'human', viewerId: holder });
    await desk.desktop.giveBack(sb, holder);
  });

  it('a holder who leaves while its relay is still opening gives the lease back, and the relay is ended', async () => {
    const holder = 'person-3';
    await desk.desktop.takeControl(sb, holder);
    let open!: () => void;
    opening = new Promise<void>((r) => (open = r));
    try {
      const before = relays.length;
      const r = (await server.call('screenTicket', { sandbox: sb, viewerId: holder })) as { ok: { url: string } };
      const ws = new WebSocket(r.ok.url);
      await new Promise<void>((res) => ws.once('open', () => res()));
      await vi.waitFor(() => expect(relays.length).toBe(before + 1));
      ws.close();
      await new Promise((res) => ws.once('close', res));
      await vi.waitFor(() => expect(desk.desktop.lease(sb)).toMatchObject({ holder: 'agent' }));
      open();
      await vi.waitFor(() => expect(relays[before]!.killed).toBe(true));
    } finally {
      opening = null;
    }
  });
});
