import { describe, expect, it } from 'vitest';
import { DesktopSizeRequests } from './desktop-size.js';
import { DesktopSizeReason, DesktopSizeStatus } from './protocol.js';

const { Server, ThisClient, OtherClient } = DesktopSizeReason;

describe('DesktopSizeRequests', () => {
  it('is supported only once the server has reported a layout, and echoes its first screen', () => {
    const sizes = new DesktopSizeRequests();
    expect(sizes.supported).toBe(false);
    sizes.layoutReported(Server, DesktopSizeStatus.Ok, { id: 0x42, flags: 3 });
    expect(sizes.supported).toBe(true);
    const { message, answered } = sizes.start(100, 50, 1000);
    expect(message.readUInt32BE(8)).toBe(0x42);
    expect(message.readUInt32BE(20)).toBe(3);
    sizes.cancel(new Error('test over'));
    return expect(answered).rejects.toThrow('test over');
  });

  it('settles on the answer to this client, not on server or other-client reports', async () => {
    const sizes = new DesktopSizeRequests();
    const { answered } = sizes.start(100, 50, 1000);
    let settled = false;
    void answered.then(() => (settled = true));
    sizes.layoutReported(Server, DesktopSizeStatus.Ok, undefined);
    sizes.layoutReported(OtherClient, DesktopSizeStatus.Ok, undefined);
    await new Promise((r) => setImmediate(r));
    expect([settled, sizes.inProgress]).toEqual([false, true]);
    sizes.layoutReported(ThisClient, DesktopSizeStatus.Ok, undefined);
    await answered;
    expect(sizes.inProgress).toBe(false);
  });

  it("rejects with the server's reason and status", async () => {
    const sizes = new DesktopSizeRequests();
    const { answered } = sizes.start(100, 50, 1000);
    sizes.layoutReported(ThisClient, DesktopSizeStatus.InvalidLayout, undefined);
    await expect(answered).rejects.toThrow('RFB server refused the resize to 100x50: invalid screen layout (status 3)');
  });

  it('times out, and a late answer to the timed-out request does not settle the next one', async () => {
    const sizes = new DesktopSizeRequests();
    await expect(sizes.start(100, 50, 10).answered).rejects.toThrow('RFB server did not confirm the resize to 100x50 within 10 ms');
    const second = sizes.start(200, 100, 1000);
    sizes.layoutReported(ThisClient, DesktopSizeStatus.Prohibited, undefined); // the first request's late answer
    expect(sizes.inProgress).toBe(true);
    sizes.layoutReported(ThisClient, DesktopSizeStatus.Ok, undefined);
    await second.answered;
  });
});
