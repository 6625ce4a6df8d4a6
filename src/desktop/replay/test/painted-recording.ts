import { RfbClient } from '../../rfb/rfb-client.js';
import { fakeRfbServer } from '../../rfb/test/fake-rfb-server.js';
import { ScreenRecorder } from '../screen-recorder.js';

/**
 * A real screen recording for tests: a fake 64x48 RFB server paints an 8x8 square moving along a
 * row, one update every 200 ms of recording time from `t0` (15 updates: 3 s), into `dir`.
 */
export async function recordPaintedScreen(dir: string, t0: number): Promise<void> {
  let t = t0;
  const server = fakeRfbServer({ width: 64, height: 48 });
  const client = await RfbClient.connect(server.transport, { timeoutMs: 2000 });
  await client.requestUpdate(false);
  const rec = new ScreenRecorder(dir, { now: () => t });
  rec.attach(client);
  for (let i = 0; i < 15; i++) {
    t += 200;
    const done = new Promise<void>((resolve) => {
      const sub = client.onUpdate(() => (sub.dispose(), resolve()));
    });
    server.paint((i * 4) % 56, 10, 8, 8, [255, (i * 17) % 256, 0]);
    await done;
  }
  await rec.stop();
  client.close();
}
