import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { transportFromStreams } from './transport.js';

describe('transportFromStreams', () => {
  it('passes data both ways and reports the end once', async () => {
    const incoming = new PassThrough();
    const outgoing = new PassThrough();
    let closedByCaller = false;
    const t = transportFromStreams(incoming, outgoing, () => (closedByCaller = true));
    const got: string[] = [];
    const closes: (Error | undefined)[] = [];
    t.onData((c) => got.push(c.toString()));
    t.onClose((err) => closes.push(err));
    t.write(Buffer.from('ping'));
    expect(outgoing.read()?.toString()).toBe('ping');
    incoming.write('pong');
    incoming.end();
    await new Promise((r) => setTimeout(r, 20));
    expect(got).toEqual(['pong']);
    expect(closes).toEqual([undefined]);
    t.close();
    expect(closedByCaller).toBe(true);
  });

  it('turns a write error (EPIPE) into a close with that error, tells late listeners, and stops writing', async () => {
    const incoming = new PassThrough();
    const outgoing = new PassThrough();
    const t = transportFromStreams(incoming, outgoing, () => {});
    outgoing.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    const late = await new Promise<Error | undefined>((resolve) => t.onClose(resolve));
    expect(late?.message).toBe('write EPIPE');
    t.write(Buffer.from('dropped'));
    expect(outgoing.read()).toBeNull();
  });
});
