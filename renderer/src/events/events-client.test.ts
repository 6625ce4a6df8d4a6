import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApiClient, CoreEvent } from '../../../src/api/contract.js';
import { FakeEventSocket } from '../test/fake-event-socket.js';
import { EventsClient, type EventsStatus } from './events-client.js';

const tick = () => new Promise((r) => setTimeout(r, 0));
const until = async (cond: () => boolean) => {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 2));
  expect(cond()).toBe(true);
};

function api(answer: () => unknown = () => ({ url: 'ws://127.0.0.1:1/ws/events?ticket=t', ticket: 't' })): ApiClient & { tickets: number } {
  const a = {
    tickets: 0,
    call: async (method: string) => {
      if (method !== 'eventsTicket') throw new Error(`unexpected ${method}`);
      a.tickets++;
      return answer();
    },
  };
  return a as unknown as ApiClient & { tickets: number };
}

let clients: EventsClient[] = [];
const make = (opts: Partial<ConstructorParameters<typeof EventsClient>[0]> = {}) => {
  const c = new EventsClient({ api: api(), WebSocket: FakeEventSocket as unknown as typeof WebSocket, backoff: [1, 1], ...opts });
  clients.push(c);
  return c;
};
beforeEach(() => FakeEventSocket.reset());
afterEach(() => {
  for (const c of clients) c.close();
  clients = [];
});

describe('EventsClient', () => {
  it('opens the ticketed stream, goes live on hello, delivers events in order', async () => {
    const c = make();
    const statuses: EventsStatus[] = [];
    c.onStatus((s) => statuses.push(s));
    const seen: CoreEvent[] = [];
    c.onEvent((e) => seen.push(e));
    await until(() => FakeEventSocket.opened.length === 1);
    expect(FakeEventSocket.last().url).toBe('ws://127.0.0.1:1/ws/events?ticket=t');
    FakeEventSocket.last().hello('e1', 4);
    FakeEventSocket.last().event({ topic: 'sandbox', sandbox: 'a', reason: 'created', seq: 5 });
    expect(statuses).toEqual(['live']);
    expect(seen.map((e) => e.seq)).toEqual([5]);
    expect(c.lastSeq).toBe(5);
  });

  it('cut: reconnecting, then a new ticket and since=last&epoch, back live without a resync', async () => {
    const c = make();
    let resyncs = 0;
    c.onResync(() => resyncs++);
    await until(() => FakeEventSocket.opened.length === 1);
    FakeEventSocket.last().hello('e1', 0);
    FakeEventSocket.last().event({ topic: 'lease', sandbox: 'a', seq: 7 });
    FakeEventSocket.last().cut();
    expect(c.status).toBe('reconnecting');
    await until(() => FakeEventSocket.opened.length === 2);
    expect(FakeEventSocket.last().url).toMatch(/ticket=t&since=7&epoch=e1$/);
    FakeEventSocket.last().hello('e1', 7, false);
    expect(c.status).toBe('live');
    expect(resyncs).toBe(0);
  });

  it('a core that restarted (another epoch) or could not serve `since` makes everyone re-read', async () => {
    const c = make();
    let resyncs = 0;
    c.onResync(() => resyncs++);
    await until(() => FakeEventSocket.opened.length === 1);
    FakeEventSocket.last().hello('e1', 3);
    FakeEventSocket.last().cut();
    await until(() => FakeEventSocket.opened.length === 2);
    FakeEventSocket.last().hello('e2', 1, true);
    expect(resyncs).toBe(1);
  });

  it('a hidden page does not reconnect (no ticket request) until it is shown', async () => {
    let hidden = false;
    let onVisible: () => void = () => undefined;
    const a = api();
    const c = make({ api: a, hidden: () => hidden, onVisibility: (fn) => ((onVisible = fn), () => undefined) });
    await until(() => FakeEventSocket.opened.length === 1);
    FakeEventSocket.last().hello();
    hidden = true;
    FakeEventSocket.last().cut();
    await new Promise((r) => setTimeout(r, 20));
    expect(a.tickets).toBe(1);
    expect(FakeEventSocket.opened.length).toBe(1);
    hidden = false;
    onVisible();
    await until(() => FakeEventSocket.opened.length === 2);
    expect(c.status).toBe('reconnecting');
  });

  it('no event stream on this core (unsupported): off, and the panels poll', async () => {
    const c = make({
      api: api(() => {
        throw Object.assign(new Error('no'), { code: 'unsupported' });
      }),
    });
    await until(() => c.status === 'off');
    await tick();
    expect(FakeEventSocket.opened).toEqual([]);
  });

  it('a bridge whose main does not forward events (a child core): the socket after all', async () => {
    make({ bridge: { eventsBridged: async () => false, onEvent: () => () => undefined } });
    await until(() => FakeEventSocket.opened.length === 1);
  });

  it('the Electron bridge carries the events: live, no socket', async () => {
    let push: (e: unknown) => void = () => undefined;
    const c = make({ bridge: { eventsBridged: async () => true, onEvent: (l) => ((push = l), () => undefined) } });
    const seen: CoreEvent[] = [];
    c.onEvent((e) => seen.push(e));
    await until(() => c.status === 'live');
    push({ topic: 'desktop', sandbox: 'a', running: true, seq: 1, at: 'x' });
    expect(seen).toHaveLength(1);
    expect(FakeEventSocket.opened).toEqual([]);
  });
});
