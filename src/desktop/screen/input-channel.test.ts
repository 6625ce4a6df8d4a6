import { afterEach, describe, expect, it } from 'vitest';
import { SandboxDeskError } from '../../shared/errors.js';
import { fakeRfbServer, type FakeRfbServer } from '../rfb/test/fake-rfb-server.js';
import type { ByteTransport } from '../rfb/rfb-client.js';
import { InputChannel } from './input-channel.js';
import { LiveScreen, type LiveLink } from './live-screen.js';

const disposables: { dispose(): void }[] = [];
afterEach(() => {
  for (const d of disposables.splice(0)) d.dispose();
});

/** Every PointerEvent (type 5) a server received, as [mask, x, y] (the client writes one per chunk). */
function pointerEvents(server: FakeRfbServer): [number, number, number][] {
  return server.received.filter((c) => c.length === 6 && c[0] === 5).map((c) => [c[1]!, c.readUInt16BE(2), c.readUInt16BE(4)]);
}

/** A transport whose server → client bytes can be held back: a pixel connection stuck mid-update. */
function holdable(inner: ByteTransport): { transport: ByteTransport; hold(on: boolean): void } {
  let held = false;
  const queue: Buffer[] = [];
  let listener: ((b: Buffer) => void) | undefined;
  return {
    transport: {
      write: (b) => inner.write(b),
      onData: (l) => {
        listener = l;
        inner.onData((b) => (held ? queue.push(b) : l(b)));
      },
      onClose: (l) => inner.onClose(l),
      close: () => inner.close(),
    },
    hold(on) {
      held = on;
      if (!on) for (const b of queue.splice(0)) listener?.(b);
    },
  };
}

/** A live screen whose link has an input pipe: each open of it gets a new fake server. */
function liveWithInput() {
  const pixels = fakeRfbServer({ width: 40, height: 30 });
  const pipe = holdable(pixels.transport);
  const inputs: FakeRfbServer[] = [];
  const screen = new LiveScreen(
    async (): Promise<LiveLink> => ({
      transport: pipe.transport,
      desktopId: 'abc00001',
      // The X pointer follows whichever connection moved it last: here only the input one does.
      measurePointer: async () => {
        const p = inputs.flatMap(pointerEvents).at(-1);
        return p ? { x: p[1], y: p[2] } : { x: 0, y: 0 };
      },
      generation: async () => '1.1',
      openInput: () => {
        const s = fakeRfbServer({ width: 40, height: 30 });
        inputs.push(s);
        return s.transport;
      },
      dispose: () => undefined,
    }),
    { stopping: () => new SandboxDeskError('desktop_not_running', 'the desktop is stopping') },
  );
  disposables.push(screen);
  return { screen, pixels, pipe, inputs };
}

/** Until the input connection that the first action started is up. */
async function inputUp(screen: LiveScreen, inputs: FakeRfbServer[]): Promise<void> {
  await screen.act({ kind: 'move', x: 0, y: 0 });
  for (let i = 0; i < 100 && !inputs.some((s) => s.received.some((c) => c.length === 20 && c[0] === 0)); i++)
    await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 20));
}

describe('input over its own RFB connection', () => {
  it('the first action goes over the live connection and starts the input one: a one-shot process waits for no second handshake', async () => {
    const { screen, pixels, inputs } = liveWithInput();
    await screen.act({ kind: 'move', x: 2, y: 3 });
    expect(pointerEvents(pixels)).toEqual([[0, 2, 3]]);
    expect(inputs).toHaveLength(1);
  });

  it('sends the events on the input connection and measures the pointer after its fence, while the pixel connection is stuck', async () => {
    const { screen, pixels, pipe, inputs } = liveWithInput();
    await inputUp(screen, inputs);
    const before = pointerEvents(pixels).length;
    const { frame } = await screen.screenshot({ maxWidth: 20 });
    // The live connection is mid-update: nothing it would answer (a fence) arrives until released.
    pipe.hold(true);
    // Frame pixel 10 of 20 over 40 → floor(10.5 * 2) = 21; 5 of 15 over 30 → 11 (the pixel it shows).
    const r = await screen.act({ kind: 'click', x: 10, y: 5 }, frame.frameId);
    expect(r).toMatchObject({ pointer: { x: 21, y: 11 }, pointerInFrame: { x: 10, y: 5 }, via: 'rfb' });
    expect(inputs).toHaveLength(1);
    expect(pointerEvents(inputs[0]!)).toEqual([
      [0, 21, 11],
      [1, 21, 11],
      [0, 21, 11],
    ]);
    expect(pointerEvents(pixels)).toHaveLength(before);
    await screen.act({ kind: 'type', text: 'a' });
    expect(inputs[0]!.received.filter((c) => c.length === 8 && c[0] === 4)).toHaveLength(2);
    pipe.hold(false);
  });

  it('opens the input connection again after it drops', async () => {
    const { screen, inputs } = liveWithInput();
    await inputUp(screen, inputs);
    inputs[0]!.close();
    await new Promise((r) => setTimeout(r, 50));
    await inputUp(screen, inputs);
    expect(inputs).toHaveLength(2);
    const r = await screen.act({ kind: 'move', x: 3, y: 4 });
    expect(r.pointer).toEqual({ x: 3, y: 4 });
    expect(pointerEvents(inputs[1]!).at(-1)).toEqual([0, 3, 4]);
  });

  it('refuses use after dispose, and a connection that finishes after dispose is closed', async () => {
    const server = fakeRfbServer({ width: 4, height: 4 });
    const channel = new InputChannel(() => server.transport, 5000);
    const pending = channel.get();
    channel.dispose();
    await expect(pending).rejects.toThrow(/closed/);
    await expect(channel.get()).rejects.toThrow(/closed/);
  });
});
