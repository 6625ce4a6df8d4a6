import { describe, expect, it, vi } from 'vitest';
import { ClientMessage } from './rfb/protocol.js';
import { fakeRfbServer, type FakeRfbServer } from './rfb/test/fake-rfb-server.js';
import { DesktopWatch, type DesktopAfterClose, type DesktopEnded } from './desktop-watch.js';

/** A watch over fake RFB servers; `after` is what the probe finds once a socket closed. */
function setup(after: DesktopAfterClose | Error) {
  const servers: FakeRfbServer[] = [];
  let probes = 0;
  const watch = new DesktopWatch({
    open: async () => {
      const s = fakeRfbServer({ width: 640, height: 480 });
      servers.push(s);
      return Object.assign(s.transport, { dispose: () => s.transport.close() });
    },
    probe: async () => {
      probes++;
      if (after instanceof Error) throw after;
      return after;
    },
  });
  const ended: DesktopEnded[] = [];
  const resized: Array<{ sandbox: string; width: number; height: number }> = [];
  watch.onEnded((e) => ended.push(e));
  watch.onResized((e) => resized.push(e));
  return { watch, servers, ended, resized, probes: () => probes };
}

/** The client's last FramebufferUpdateRequest as [incremental, x, y, w, h], in a list (empty before one was sent). */
function updateRequests(s: FakeRfbServer): number[][] {
  const all = Buffer.concat(s.received);
  const out: number[][] = [];
  // Scanned from the end: the handshake and SetPixelFormat/SetEncodings come first; a request is 10 bytes starting with 3.
  for (let i = all.length - 10; i >= 0; i--) {
    if (all[i] !== ClientMessage.FramebufferUpdateRequest) continue;
    const m = all.subarray(i, i + 10);
    if (m[1]! > 1) continue;
    out.unshift([m[1]!, m.readUInt16BE(2), m.readUInt16BE(4), m.readUInt16BE(6), m.readUInt16BE(8)]);
    break;
  }
  return out;
}

describe('DesktopWatch', () => {
  it('asks for the top-left pixel only (incrementally), so a busy screen costs next to nothing', async () => {
    const t = setup({ running: true, dirExists: true, failed: null });
    t.watch.watch('a');
    await vi.waitFor(() => expect(updateRequests(t.servers[0]!)).toEqual([[1, 0, 0, 1, 1]]));
    expect(t.watch.watching('a')).toBe(true);
    t.watch.dispose();
  });

  it('the socket closing with the directory still there is a crash, said once', async () => {
    const t = setup({ running: false, dirExists: true, failed: 'Xvnc exited: killed' });
    t.watch.watch('a');
    t.watch.watch('a'); // idempotent: one connection
    await vi.waitFor(() => expect(updateRequests(t.servers[0]!).length).toBe(1));
    expect(t.servers.length).toBe(1);
    t.servers[0]!.close();
    await vi.waitFor(() => expect(t.ended.length).toBe(1));
    expect(t.ended[0]).toMatchObject({ sandbox: 'a', how: 'crashed' });
    expect(t.ended[0]!.detail).toContain('Xvnc exited: killed');
    expect(t.watch.watching('a')).toBe(false);
    t.watch.dispose();
  });

  it('the directory gone means another process stopped it; a probe that fails means the sandbox went away', async () => {
    const stopped = setup({ running: false, dirExists: false, failed: null });
    stopped.watch.watch('a');
    await vi.waitFor(() => expect(updateRequests(stopped.servers[0]!).length).toBe(1));
    stopped.servers[0]!.close();
    await vi.waitFor(() => expect(stopped.ended.map((e) => e.how)).toEqual(['stopped']));
    stopped.watch.dispose();

    const gone = setup(new Error('container is not running'));
    gone.watch.watch('a');
    await vi.waitFor(() => expect(updateRequests(gone.servers[0]!).length).toBe(1));
    gone.servers[0]!.close();
    await vi.waitFor(() => expect(gone.ended.map((e) => e.how)).toEqual(['stopped']));
    gone.watch.dispose();
  });

  it('a close while the desktop still runs (the server dropped only us) watches again, silently', async () => {
    const t = setup({ running: true, dirExists: true, failed: null });
    t.watch.watch('a');
    await vi.waitFor(() => expect(updateRequests(t.servers[0]!).length).toBe(1));
    t.servers[0]!.close();
    await vi.waitFor(() => expect(t.servers.length).toBe(2));
    await vi.waitFor(() => expect(updateRequests(t.servers[1]!).length).toBe(1));
    expect(t.ended).toEqual([]);
    t.watch.dispose();
  });

  it('a desktop that dies before the watch could connect is asked about all the same', async () => {
    let opens = 0;
    const ended: DesktopEnded[] = [];
    const watch = new DesktopWatch({
      open: async () => {
        opens++;
        throw new Error('the desktop of sandbox a is not running');
      },
      probe: async () => ({ running: false, dirExists: true, failed: null }),
    });
    watch.onEnded((e) => ended.push(e));
    watch.watch('a');
    await vi.waitFor(() => expect(ended.map((e) => e.how)).toEqual(['crashed']));
    expect(opens).toBe(1);
    watch.dispose();
  });

  it('unwatch (this process stops the desktop) closes the connection and says nothing', async () => {
    const t = setup({ running: false, dirExists: true, failed: null });
    t.watch.watch('a');
    await vi.waitFor(() => expect(updateRequests(t.servers[0]!).length).toBe(1));
    t.watch.unwatch('a');
    await vi.waitFor(() => expect(t.servers[0]!.clientClosed).toBe(true));
    await new Promise((r) => setTimeout(r, 20));
    expect(t.probes()).toBe(0);
    expect(t.ended).toEqual([]);
    t.watch.dispose();
  });

  it('a resize (DesktopSize from the server) is told with the new size', async () => {
    const t = setup({ running: true, dirExists: true, failed: null });
    t.watch.watch('a');
    await vi.waitFor(() => expect(updateRequests(t.servers[0]!).length).toBe(1));
    t.servers[0]!.desktopSize(800, 600);
    await vi.waitFor(() => expect(t.resized).toEqual([{ sandbox: 'a', width: 800, height: 600 }]));
    t.watch.dispose();
  });
});
