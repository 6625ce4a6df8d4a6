import '../test/setup.js';
import { act, render, screen } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EventsClient } from '../events/events-client.js';
import { ScreenOnly } from './ScreenOnly.js';
import { desktopStatus, FakeApi } from '../test/fake-api.js';
import { FakeEventSocket } from '../test/fake-event-socket.js';

// jsdom cannot drive noVNC: a stand-in RFB that only exists.
vi.mock('@novnc/novnc', () => ({
  default: class FakeRFB extends EventTarget {
    viewOnly = false;
    scaleViewport = false;
    clipViewport = false;
    resizeSession = false;
    background = '';
    disconnect() {
      this.dispatchEvent(new CustomEvent('disconnect', { detail: { clean: true } }));
    }
  },
}));

let clients: EventsClient[] = [];
beforeEach(() => {
  FakeEventSocket.reset();
  localStorage.clear();
});
afterEach(() => {
  for (const c of clients) c.close();
  clients = [];
});

function liveApi(api: FakeApi): EventsClient {
  api.on('eventsTicket', () => ({ url: 'ws://127.0.0.1:1/ws/events?ticket=t', ticket: 't' }));
  const c = new EventsClient({ api, WebSocket: FakeEventSocket as unknown as typeof WebSocket, backoff: [10_000] });
  clients.push(c);
  return c;
}

const counts = (api: FakeApi) => ({
  status: api.callsOf('desktopStatus').length,
  lease: api.callsOf('lease').length,
  action: api.callsOf('desktopLastAction').length,
});

describe('the popped-out screen (?screen=)', () => {
  it('keeps status, lease and agent action from the event stream: no timer while live, re-read on events, polling while cut', async () => {
    const api = new FakeApi({
      desktops: { alpha: desktopStatus({ sandbox: 'alpha', running: true, display: ':20', geometry: '1280x800' }) },
    });
    const events = liveApi(api);
    render(<ScreenOnly api={api} sandbox="alpha" events={events} />);
    await screen.findByTestId('lease-indicator');
    await vi.waitFor(() => expect(FakeEventSocket.opened.length).toBe(1));
    act(() => FakeEventSocket.last().hello('e1', 0));
    await new Promise((r) => setTimeout(r, 200)); // the catch-up reads
    const live = counts(api);
    // Longer than every poll the pane has (agent action 1 s, lease 2 s): nothing is fetched on a timer.
    await new Promise((r) => setTimeout(r, 2500));
    expect(counts(api)).toEqual(live);

    act(() => FakeEventSocket.last().event({ topic: 'lease', sandbox: 'alpha', seq: 1 }));
    await vi.waitFor(() => expect(api.callsOf('lease').length).toBeGreaterThan(live.lease));
    act(() => FakeEventSocket.last().event({ topic: 'agentAction', sandbox: 'alpha', seq: 2 }));
    await vi.waitFor(() => expect(api.callsOf('desktopLastAction').length).toBeGreaterThan(live.action));
    // Another sandbox's events are not this page's business.
    const before = counts(api).status;
    act(() => FakeEventSocket.last().event({ topic: 'desktop', sandbox: 'beta', running: false, seq: 3 }));
    await new Promise((r) => setTimeout(r, 100));
    expect(counts(api).status).toBe(before);

    // The desktop dies inside the sandbox: the event alone brings the page to "crashed", with where its log is.
    api.desktops.alpha = desktopStatus({
      sandbox: 'alpha',
      running: false,
      ended: { how: 'crashed', at: '2026-01-01T00:00:00.000Z', detail: 'Xvnc closed its RFB socket' },
    });
    act(() => FakeEventSocket.last().event({ topic: 'desktop', sandbox: 'alpha', running: false, cause: 'crashed', seq: 4 }));
    expect(await screen.findByText('The desktop is not running')).toBeTruthy();
    const crash = await screen.findByTestId('desktop-crashed');
    expect(crash.textContent).toContain('Xvnc closed its RFB socket');
    expect(crash.textContent).toContain('sandbox-desk logs alpha --source desktop');

    // Cut: the page says so and polls until the stream is back.
    act(() => FakeEventSocket.last().cut());
    expect(await screen.findByTestId('events-reconnecting')).toBeTruthy();
    const cut = counts(api).status;
    await vi.waitFor(() => expect(api.callsOf('desktopStatus').length).toBeGreaterThan(cut), { timeout: 3500 });
  }, 15_000);

  it('without an event stream it polls as before', async () => {
    const api = new FakeApi({
      desktops: { alpha: desktopStatus({ sandbox: 'alpha', running: true, display: ':20', geometry: '1280x800' }) },
    });
    render(<ScreenOnly api={api} sandbox="alpha" />);
    await screen.findByTestId('lease-indicator');
    const first = counts(api).action;
    await vi.waitFor(() => expect(api.callsOf('desktopLastAction').length).toBeGreaterThan(first), { timeout: 2500 });
  });
});
