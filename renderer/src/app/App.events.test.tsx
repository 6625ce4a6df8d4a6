import '../test/setup.js';
import { act, render, screen } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { App } from './App.js';
import { EventsClient } from '../events/events-client.js';
import { FakeApi, sandboxInfo } from '../test/fake-api.js';
import { FakeEventSocket } from '../test/fake-event-socket.js';

/** A FakeApi that serves an event stream (a FakeEventSocket), and the client that reads it. */
function liveApi(api: FakeApi, hidden: () => boolean = () => false) {
  api.on('eventsTicket', () => ({ url: 'ws://127.0.0.1:1/ws/events?ticket=t', ticket: 't' }));
  return new EventsClient({ api, WebSocket: FakeEventSocket as unknown as typeof WebSocket, backoff: [10_000], hidden });
}

let clients: EventsClient[] = [];
beforeEach(() => FakeEventSocket.reset());
afterEach(() => {
  for (const c of clients) c.close();
  clients = [];
});

const goLive = async () => {
  await vi.waitFor(() => expect(FakeEventSocket.opened.length).toBe(1));
  act(() => FakeEventSocket.last().hello('e1', 0));
};

describe('pushed state in the window', () => {
  it('with the stream live the list is re-read on a sandbox event, not on a timer; cut, it says Reconnecting… and polls', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha', state: 'running' })] });
    const events = liveApi(api);
    clients.push(events);
    render(<App api={api} events={events} />);
    await screen.findByTestId('sandbox-row-alpha');
    await goLive();
    await vi.waitFor(() => expect(api.callsOf('listSandboxes').length).toBeGreaterThanOrEqual(2)); // the catch-up read
    const afterLive = api.callsOf('listSandboxes').length;
    await new Promise((r) => setTimeout(r, 2500)); // longer than the 2 s poll
    expect(api.callsOf('listSandboxes').length).toBe(afterLive);

    api.sandboxes[0]!.state = 'stopped';
    act(() => FakeEventSocket.last().event({ topic: 'sandbox', sandbox: 'alpha', reason: 'engine:die', seq: 1 }));
    await screen.findByText('stopped', { selector: '[data-testid="sandbox-state-alpha"]' });

    act(() => FakeEventSocket.last().cut());
    expect(await screen.findByTestId('events-reconnecting')).toBeTruthy();
    api.sandboxes[0]!.state = 'running';
    // The fallback poll (2 s) shows the change while the stream is away.
    await screen.findByText('running', { selector: '[data-testid="sandbox-state-alpha"]' }, { timeout: 3500 });
  }, 15_000);

  it('a host added to the allow list shows on the details card at once (a policy event re-reads the list)', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha', state: 'running', network: { mode: 'allow', allow: [] } })] });
    const events = liveApi(api);
    clients.push(events);
    render(<App api={api} events={events} />);
    await screen.findByTestId('sandbox-row-alpha');
    await goLive();
    act(() => screen.getByTestId('view-details').click());
    expect((await screen.findByTestId('details-network')).textContent).toMatch(/nothing allowed yet/);
    // What the network panel's Allow does: the core changes the policy and publishes it.
    const policy = await api.call('sandboxNetwork', { name: 'alpha', allow: ['example.com:443'] });
    act(() => FakeEventSocket.last().event({ topic: 'network', sandbox: 'alpha', kind: 'policy', policy, seq: 1 }));
    await vi.waitFor(() => expect(screen.getByTestId('details-network').textContent).toMatch(/example\.com:443/), { timeout: 1500 });
    expect(screen.getByTestId('details-network').textContent).not.toMatch(/nothing allowed/);
  });

  it('a hidden window makes no calls, even when events say something changed; shown, it re-reads', async () => {
    let hidden = false;
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha', state: 'running' })] });
    const events = liveApi(api, () => hidden);
    clients.push(events);
    render(<App api={api} events={events} />);
    await screen.findByTestId('sandbox-row-alpha');
    await goLive();
    await new Promise((r) => setTimeout(r, 100));
    const setHidden = (v: boolean) => {
      hidden = v;
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (v ? 'hidden' : 'visible') });
      act(() => void document.dispatchEvent(new Event('visibilitychange')));
    };
    setHidden(true);
    const before = api.calls.length;
    api.sandboxes[0]!.state = 'stopped';
    act(() => FakeEventSocket.last().event({ topic: 'sandbox', sandbox: 'alpha', reason: 'stopped', seq: 1 }));
    await new Promise((r) => setTimeout(r, 2500));
    expect(api.calls.slice(before)).toEqual([]);
    setHidden(false);
    await screen.findByText('stopped', { selector: '[data-testid="sandbox-state-alpha"]' });
  }, 15_000);
});
