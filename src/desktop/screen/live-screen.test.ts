import { afterEach, describe, expect, it } from 'vitest';
import { SandboxDeskError } from '../../shared/errors.js';
import { decodePngSize } from '../png-encode.js';
import { fakeRfbServer, type FakeRfbServer } from '../rfb/test/fake-rfb-server.js';
import { LiveScreen, type LiveLink } from './live-screen.js';

const screens: LiveScreen[] = [];
afterEach(() => {
  for (const s of screens.splice(0)) s.dispose();
});

/**
 * The X server's side that every process reads alike (the boundary faked): RandR's geometry
 * generation, and the keys xdotool pressed (names X knows: the table's hex keysyms and XF86 names).
 */
interface FakeX {
  generation: string;
  xdotool: string[][];
}

/** A live screen over fake RFB servers: each (re)connection gets a new server; the pointer is what the last PointerEvent said. */
function live(width = 40, height = 30, x?: FakeX) {
  const servers: FakeRfbServer[] = [];
  let opens = 0;
  const screen = new LiveScreen(
    async (): Promise<LiveLink> => {
      opens++;
      const server = fakeRfbServer({ width, height });
      servers.push(server);
      return {
        transport: server.transport,
        desktopId: (0xabc00000 + opens).toString(16),
        measurePointer: async () => lastPointer(server),
        ...(x
          ? {
              generation: async () => x.generation,
              xdotoolKeys: async (combos: string[]) => {
                const unknown = combos.flatMap((c) => c.split('+')).filter((n) => !/^(0x[0-9a-f]+|XF86\w+)$/.test(n));
                if (unknown.length) throw new SandboxDeskError('invalid_input', `${unknown.join(', ')}: not a key name X knows`);
                x.xdotool.push(combos);
              },
            }
          : {}),
        dispose: () => undefined,
      };
    },
    { stopping: () => new SandboxDeskError('desktop_not_running', 'the desktop is stopping') },
  );
  screens.push(screen);
  return { screen, servers, opens: () => opens };
}

/** Every PointerEvent (type 5) the client sent, as [mask, x, y]. */
function pointerEvents(server: FakeRfbServer): [number, number, number][] {
  const out: [number, number, number][] = [];
  // Client messages are not self-delimiting here; PointerEvents are written one per chunk.
  for (const chunk of server.received)
    if (chunk.length === 6 && chunk[0] === 5) out.push([chunk[1]!, chunk.readUInt16BE(2), chunk.readUInt16BE(4)]);
  return out;
}

function keyEvents(server: FakeRfbServer): [boolean, number][] {
  return server.received.filter((c) => c.length === 8 && c[0] === 4).map((c) => [c[1] === 1, c.readUInt32BE(4)]);
}

function lastPointer(server: FakeRfbServer): { x: number; y: number } {
  const p = pointerEvents(server).at(-1);
  return p ? { x: p[1], y: p[2] } : { x: 0, y: 0 };
}

describe('LiveScreen', () => {
  it('takes screenshots from the live framebuffer without connecting again', async () => {
    const { screen, opens } = live(40, 30);
    const a = await screen.screenshot();
    const b = await screen.screenshot({ maxWidth: 21, maxHeight: 21 });
    expect(opens()).toBe(1);
    expect(a.frame).toMatchObject({ width: 40, height: 30, scale: 1, format: 'png', firstSinceChange: true });
    expect(b.frame).toMatchObject({ width: 21, height: 15, screenWidth: 40, screenHeight: 30, firstSinceChange: false });
    expect(b.frame.scale).toBe(21 / 40);
    expect(decodePngSize(b.image)).toEqual({ width: 21, height: 15 });
    expect(a.frame.frameId).not.toBe(b.frame.frameId);
    expect(new Date(a.frame.takenAt).getTime()).toBeGreaterThan(0);
  });

  it('maps a click in a scaled frame back to the screen pixel it shows, and measures the pointer', async () => {
    const { screen, servers } = live(40, 30);
    const { frame } = await screen.screenshot({ maxWidth: 21 });
    const r = await screen.act({ kind: 'click', x: 20, y: 14 }, frame.frameId);
    // frame pixel 20 of 21 over 40 → floor(20.5 * 40 / 21) = 39; 14 of 15 over 30 → 29
    expect(r).toMatchObject({ pointer: { x: 39, y: 29 }, pointerInFrame: { x: 20, y: 14 }, frameId: frame.frameId, via: 'rfb' });
    expect(pointerEvents(servers[0]!).slice(-3)).toEqual([
      [0, 39, 29],
      [1, 39, 29],
      [0, 39, 29],
    ]);
  });

  it('refuses points outside the frame, unknown frames, and frames from before a resize (stale_frame with the geometry)', async () => {
    const { screen, servers } = live(40, 30);
    const { frame } = await screen.screenshot();
    await expect(screen.act({ kind: 'move', x: 40, y: 0 }, frame.frameId)).rejects.toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(/40x30/),
    });
    await expect(screen.act({ kind: 'move', x: 1, y: -1 })).rejects.toMatchObject({ code: 'invalid_input' });
    await expect(screen.act({ kind: 'move', x: 1, y: 1 }, 'nope')).rejects.toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(/never taken/),
    });
    const resized = new Promise((r) => setTimeout(r, 50));
    servers[0]!.desktopSize(50, 20);
    await resized;
    const err = await screen.act({ kind: 'move', x: 1, y: 1 }, frame.frameId).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'stale_frame', details: { current: { width: 50, height: 20 } } });
    const next = await screen.screenshot();
    expect(next.frame).toMatchObject({ width: 50, height: 20, firstSinceChange: true });
    await expect(screen.act({ kind: 'move', x: 49, y: 19 }, next.frame.frameId)).resolves.toMatchObject({ pointer: { x: 49, y: 19 } });
  });

  it('reconnects after the server goes away, and frames of the old connection are stale', async () => {
    const { screen, servers, opens } = live();
    const { frame } = await screen.screenshot();
    servers[0]!.close();
    await new Promise((r) => setTimeout(r, 50));
    await expect(screen.act({ kind: 'move', x: 1, y: 1 }, frame.frameId)).rejects.toMatchObject({ code: 'stale_frame' });
    expect(opens()).toBe(2);
    expect((await screen.screenshot()).frame.firstSinceChange).toBe(true);
  });

  it('types any Unicode text and presses combinations as KeyEvents', async () => {
    const { screen, servers } = live();
    await screen.act({ kind: 'type', text: 'a€' });
    await screen.act({ kind: 'key', keys: 'ctrl+l' });
    expect(keyEvents(servers[0]!)).toEqual([
      [true, 0x61],
      [false, 0x61],
      [true, 0x010020ac],
      [false, 0x010020ac],
      [true, 0xffe3],
      [true, 0x6c],
      [false, 0x6c],
      [false, 0xffe3],
    ]);
  });

  it('drags with the button held, and scrolls with wheel buttons', async () => {
    const { screen, servers } = live();
    await screen.act({ kind: 'drag', x: 0, y: 0, toX: 16, toY: 8 });
    const ev = pointerEvents(servers[0]!);
    expect(ev[1]).toEqual([1, 0, 0]);
    expect(ev.at(-2)).toEqual([1, 16, 8]);
    expect(ev.at(-1)).toEqual([0, 16, 8]);
    await screen.act({ kind: 'scroll', x: 3, y: 3, direction: 'down', amount: 2 });
    expect(pointerEvents(servers[0]!).slice(-4)).toEqual([
      [16, 3, 3],
      [0, 3, 3],
      [16, 3, 3],
      [0, 3, 3],
    ]);
  });

  it('presses keys outside the keysym table with xdotool, says so, and lets X refuse names it does not know', async () => {
    const x: FakeX = { generation: '1.1', xdotool: [] };
    const { screen, servers } = live(40, 30, x);
    const r = await screen.act({ kind: 'key', keys: 'ctrl+XF86AudioMute XF86Back' });
    expect(r).toMatchObject({ via: 'xdotool', note: expect.stringMatching(/XF86AudioMute, XF86Back not in the RFB key table/) });
    expect(x.xdotool).toEqual([['0xffe3+XF86AudioMute', 'XF86Back']]);
    expect(keyEvents(servers[0]!)).toEqual([]);
    await expect(screen.act({ kind: 'key', keys: 'ctrl+Banana_Split' })).rejects.toThrow(/Banana_Split: not a key name X knows/);
    // Table keys stay on RFB.
    await expect(screen.act({ kind: 'key', keys: 'Return' })).resolves.toMatchObject({ via: 'rfb' });
  });

  it('refuses bad text and keys before connecting, and everything once disposed', async () => {
    const { screen, opens } = live();
    await expect(screen.act({ kind: 'type', text: 'x'.repeat(1 << 20) })).rejects.toThrow(/above the limit/);
    await expect(screen.act({ kind: 'key', keys: 'hyper+z!z' })).rejects.toThrow(/not a key name/);
    await expect(screen.act({ kind: 'key', keys: 'ctrl+é€' })).rejects.toThrow(/not a key name/);
    expect(opens()).toBe(0);
    screen.dispose();
    await expect(screen.screenshot()).rejects.toMatchObject({ code: 'desktop_not_running' });
  });

  it('waits for a change in a region and for the screen to be quiet', async () => {
    const { screen, servers } = live(40, 30);
    await screen.screenshot();
    expect(await screen.waitForChange({ region: { x: 0, y: 0, width: 5, height: 5 }, timeoutMs: 50 })).toBe(false);
    const changed = screen.waitForChange({ region: { x: 0, y: 0, width: 5, height: 5 }, timeoutMs: 2000 });
    servers[0]!.paint(30, 20, 2, 2, [1, 2, 3]); // outside the region: does not count
    servers[0]!.paint(3, 3, 2, 2, [1, 2, 3]);
    expect(await changed).toBe(true);
    const timer = setInterval(() => servers[0]!.paint(0, 0, 1, 1, [9, 9, 9]), 10);
    expect(await screen.waitUntilStable({ quietMs: 250, timeoutMs: 600 })).toBe(false);
    clearInterval(timer);
    expect(await screen.waitUntilStable({ quietMs: 250, timeoutMs: 2000 })).toBe(true);
  });
});

describe('frames across processes', () => {
  it('accepts a frame id another process took on the same desktop and screen size, and calls others stale', async () => {
    const a = live(40, 30);
    const { frame } = await a.screen.screenshot({ maxWidth: 20 });
    expect(frame.frameId).toMatch(/^abc00001\.40x30\.20x15\./);
    // A second process on the same desktop run (its first connection has the same desktop id).
    const b = live(40, 30);
    await expect(b.screen.act({ kind: 'move', x: 19, y: 14 }, frame.frameId)).resolves.toMatchObject({ pointer: { x: 39, y: 29 } });
    await expect(b.screen.act({ kind: 'move', x: 1, y: 1 }, frame.frameId.replace('40x30', '50x30'))).rejects.toMatchObject({
      code: 'stale_frame',
    });
    await expect(b.screen.act({ kind: 'move', x: 1, y: 1 }, frame.frameId.replace('abc00001', 'abc00002'))).rejects.toMatchObject({
      code: 'stale_frame',
    });
    await expect(b.screen.act({ kind: 'move', x: 1, y: 1 }, 'abc00001.40x30.80x15.x')).rejects.toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(/never taken/),
    });
  });
});

describe('frames across processes and resizes', () => {
  it('refuses a frame from before a resize and back made between two other processes (the geometry generation)', async () => {
    const x: FakeX = { generation: 'b313f1.b313f1', xdotool: [] };
    // Process 1 takes the frame; its id carries the generation.
    const first = live(40, 30, x);
    const { frame } = await first.screen.screenshot();
    expect(frame.frameId).toMatch(/^abc00001\.40x30\.40x30\.gb313f1\.b313f1\./);
    first.screen.dispose();
    // Process 2 resizes to 50x20 and back to 40x30: RandR's timestamps move, the size is the same again.
    x.generation = 'b3a001.b3a001';
    // Process 3 acts with the frame: same desktop run, same size, but not the same geometry any more.
    const third = live(40, 30, x);
    const err = await third.screen.act({ kind: 'click', x: 5, y: 5 }, frame.frameId).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'stale_frame', details: { current: { width: 40, height: 30 } } });
    // A frame taken in the current generation works there.
    const fresh = await third.screen.screenshot();
    await expect(third.screen.act({ kind: 'click', x: 5, y: 5 }, fresh.frame.frameId)).resolves.toMatchObject({ pointer: { x: 5, y: 5 } });
  });
});

describe('LiveScreen.disconnect', () => {
  it('drops the connection; the next call reconnects and older frames are stale, not unknown', async () => {
    const { screen, opens } = live();
    const { frame } = await screen.screenshot();
    screen.disconnect();
    await expect(screen.act({ kind: 'move', x: 1, y: 1 }, frame.frameId)).rejects.toMatchObject({ code: 'stale_frame' });
    expect(opens()).toBe(2);
  });
});

describe('LiveScreen update pacing', () => {
  it('asks for at most one update per interval however fast the screen changes', async () => {
    const { screen, servers } = live(40, 30);
    await screen.screenshot();
    await new Promise((r) => setTimeout(r, 150));
    const requests = () => servers[0]!.received.filter((c) => c[0] === 3 && c.length === 10).length;
    const before = requests();
    for (let i = 0; i < 20; i++) servers[0]!.paint(0, 0, 2, 2, [i, i, i]);
    await new Promise((r) => setTimeout(r, 40));
    expect(requests() - before).toBeLessThanOrEqual(1);
    await new Promise((r) => setTimeout(r, 150));
    // The paced request did go out: changes keep arriving, just not faster than the interval.
    expect(requests() - before).toBeGreaterThanOrEqual(1);
    expect(requests() - before).toBeLessThanOrEqual(3);
  });
});
