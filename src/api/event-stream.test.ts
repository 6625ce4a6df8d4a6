import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { LocalProvider } from '../sandbox/local/local-provider.js';
import { ProviderRegistry } from '../sandbox/registry.js';
import { STREAM_CLOSE, type EventFrame } from './contract.js';
import { LocalServer } from './local-server.js';
import { SandboxDesk } from './sandbox-desk.js';

let dir: string;
let desk: SandboxDesk;
let server: LocalServer;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sdesk-evstream-'));
  const registry = new ProviderRegistry();
  registry.registerBuiltin(new LocalProvider());
  desk = new SandboxDesk({ dataDir: dir, registry, plugins: false });
  server = new LocalServer({ desk });
  await server.listen();
});
afterAll(async () => {
  await server.close();
  await desk.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Opens /ws/events with a fresh ticket; collects frames; resolves on open. */
async function connect(query = ''): Promise<{ ws: WebSocket; frames: EventFrame[]; closed: Promise<number> }> {
  const r = (await server.call('eventsTicket', {})) as { ok: { url: string } };
  const ws = new WebSocket(r.ok.url + query);
  const frames: EventFrame[] = [];
  ws.on('message', (d: Buffer) => frames.push(JSON.parse(d.toString()) as EventFrame));
  const closed = new Promise<number>((res) => ws.on('close', (code) => res(code)));
  await new Promise<void>((res, rej) => {
    ws.once('open', () => res());
    ws.once('error', rej);
  });
  return { ws, frames, closed };
}

const until = async (cond: () => boolean) => {
  for (let i = 0; i < 400 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(cond()).toBe(true);
};

describe('/ws/events', () => {
  it('says hello, then streams events; the bus counts it as a listener while open', async () => {
    const c = await connect();
    await until(() => c.frames.length === 1);
    expect(c.frames[0]).toMatchObject({ type: 'hello', epoch: desk.events.epoch, resync: true });
    expect(desk.events.listened).toBe(true);
    desk.events.publish({ topic: 'sandbox', sandbox: 'x', reason: 'created' });
    await until(() => c.frames.length === 2);
    expect(c.frames[1]).toMatchObject({ type: 'event', event: { topic: 'sandbox', sandbox: 'x' } });
    c.ws.close();
    await c.closed;
    await until(() => !desk.events.listened);
  });

  it('a client cut off catches up with since + epoch: exactly what it missed, in order', async () => {
    const first = await connect();
    await until(() => first.frames.length === 1);
    desk.events.publish({ topic: 'sandbox', sandbox: 'a', reason: 'created' });
    await until(() => first.frames.length === 2);
    const last = (first.frames[1] as Extract<EventFrame, { type: 'event' }>).event.seq;
    first.ws.terminate(); // the cut
    desk.events.publish({ topic: 'sandbox', sandbox: 'b', reason: 'created' });
    desk.events.publish({ topic: 'lease', sandbox: 'b' });
    const again = await connect(`&since=${last}&epoch=${desk.events.epoch}`);
    await until(() => again.frames.length === 3);
    expect(again.frames[0]).toMatchObject({ type: 'hello', resync: false });
    expect(again.frames.slice(1).map((f) => (f.type === 'event' ? f.event.seq : 0))).toEqual([last + 1, last + 2]);
    again.ws.close();
  });

  it('a since from another epoch (the core restarted) asks the client to re-read', async () => {
    const c = await connect(`&since=3&epoch=someoneelse`);
    await until(() => c.frames.length === 1);
    expect(c.frames[0]).toMatchObject({ type: 'hello', resync: true });
    c.ws.close();
  });

  it('refuses a missing, reused or foreign ticket with the ticket close codes', async () => {
    const bare = new WebSocket(`ws://127.0.0.1:${server.port}/ws/events`);
    expect(await new Promise((r) => bare.on('close', (code) => r(code)))).toBe(STREAM_CLOSE.ticketUnknown);
    const r = (await server.call('eventsTicket', {})) as { ok: { url: string } };
    const once = new WebSocket(r.ok.url);
    await new Promise((res) => once.on('open', res));
    const twice = new WebSocket(r.ok.url);
    expect(await new Promise((res) => twice.on('close', (code) => res(code)))).toBe(STREAM_CLOSE.ticketUsed);
    once.close();
    const foreign = new WebSocket(r.ok.url.replace(/ticket=.*/, 'ticket=00'), { headers: { Origin: 'http://evil.example' } });
    expect(await new Promise((res) => foreign.on('close', (code) => res(code)))).toBe(STREAM_CLOSE.originRefused);
  });

  it('lists recent operations (persisted) and publishes each step of one', async () => {
    const c = await connect();
    const op = desk.tracker.start('checkpoint', 'box', 'box');
    op.progress('saving memory', 0.5);
    op.end();
    await until(() => c.frames.filter((f) => f.type === 'event' && f.event.topic === 'operation').length >= 2);
    const last = c.frames.at(-1) as Extract<EventFrame, { type: 'event' }>;
    expect(last.event).toMatchObject({ topic: 'operation', operation: { id: op.id, state: 'succeeded', kind: 'checkpoint' } });
    const listed = (await server.call('listOperations', {})) as { ok: Array<{ id: string; state: string }> };
    expect(listed.ok.find((o) => o.id === op.id)?.state).toBe('succeeded');
    c.ws.close();
  });
});
