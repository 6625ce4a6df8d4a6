import '../test/setup.js';
import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiProvider } from '../app/api-context.js';
import { ScreenPane } from './ScreenPane.js';
import { desktopStatus, FakeApi } from '../test/fake-api.js';
import type { AgentActionView } from '../../../src/api/contract.js';
import { EventsClient } from '../events/events-client.js';
import { EventsProvider } from '../events/events-context.js';
import { FakeEventSocket } from '../test/fake-event-socket.js';

// jsdom has no canvas or WebSocket worth driving: a stand-in RFB records how it was made and used.
const rfbs = vi.hoisted(
  () =>
    [] as Array<{
      url: string;
      viewOnly: boolean;
      scaleViewport: boolean;
      clipViewport: boolean;
      resizeSession: boolean;
      /** Each time resizeSession was set true while not view-only: noVNC sends SetDesktopSize then. */
      resizeRequests: number;
      disconnected: boolean;
      emit: (type: string, detail?: unknown) => void;
    }>,
);
vi.mock('@novnc/novnc', () => ({
  default: class FakeRFB extends EventTarget {
    viewOnly = false;
    scaleViewport = false;
    clipViewport = false;
    private resize = false;
    resizeRequests = 0;
    get resizeSession() {
      return this.resize;
    }
    set resizeSession(v: boolean) {
      this.resize = v;
      if (v && !this.viewOnly) this.resizeRequests++;
    }
    background = '';
    disconnected = false;
    constructor(
      target: HTMLElement,
      readonly url: string,
    ) {
      super();
      // noVNC draws into a canvas it adds to the target: the agent's click markers are placed over it.
      target.appendChild(document.createElement('canvas'));
      rfbs.push(this);
    }
    emit(type: string, detail?: unknown) {
      this.dispatchEvent(new CustomEvent(type, { detail }));
    }
    disconnect() {
      this.disconnected = true;
      this.emit('disconnect', { clean: true });
    }
  },
}));

beforeEach(() => {
  rfbs.length = 0;
  localStorage.clear();
  window.__sdeskScreenConnected = false;
});

const renderPane = (api: FakeApi) =>
  render(
    <ApiProvider api={api}>
      <ScreenPane sandbox="alpha" visible />
    </ApiProvider>,
  );

describe('screen pane', () => {
  it("says when the sandbox's shell shares the display, and why; says nothing when it is isolated", async () => {
    const reason = 'granted at start (grantShellDisplay): the desktop runs as agent';
    const api = new FakeApi({
      desktops: {
        alpha: desktopStatus({
          sandbox: 'alpha',
          running: true,
          display: ':20',
          geometry: '1280x800',
          displayIsolation: 'shared',
          displayIsolationReason: reason,
          displayUser: 'agent',
          shellDisplayGranted: true,
        }),
        beta: desktopStatus({
          sandbox: 'beta',
          running: true,
          display: ':20',
          geometry: '1024x768',
          displayIsolation: 'isolated',
          displayUser: 'sdesk-display',
        }),
      },
    });
    const view = renderPane(api);
    const pill = await screen.findByTestId('display-shared');
    expect(pill.getAttribute('title')).toBe(reason);
    view.rerender(
      <ApiProvider api={api}>
        <ScreenPane sandbox="beta" visible />
      </ApiProvider>,
    );
    expect(await screen.findByText(':20 1024x768')).toBeTruthy();
    expect(screen.queryByTestId('display-shared')).toBeNull();
  });

  it('an image without the desktop: one line naming the missing parts once, no Start, an offer to create a desktop sandbox', async () => {
    const api = new FakeApi({
      desktops: {
        alpha: desktopStatus({
          sandbox: 'alpha',
          placement: 'sandbox',
          missing: ['Xvnc', 'xfwm4', 'chromium'],
          reason: 'the sandbox lacks Xvnc, xfwm4, chromium; a docker sandbox from sandbox-desk/desktop:latest has the whole desktop',
        }),
      },
    });
    const create = vi.fn();
    render(
      <ApiProvider api={api}>
        <ScreenPane sandbox="alpha" visible onCreateDesktopSandbox={create} />
      </ApiProvider>,
    );
    const card = await screen.findByTestId('desktop-unavailable');
    expect(screen.getByTestId('desktop-missing').textContent).toBe(
      "This sandbox's image lacks the desktop's parts: Xvnc, xfwm4, chromium.",
    );
    // Each part once in the whole pane: not again as a "Why" or a hint.
    expect(card.textContent.match(/Xvnc/g)).toHaveLength(1);
    expect(screen.queryByTestId('desktop-start')).toBeNull();
    expect(screen.queryByTestId('desktop-reason')).toBeNull();
    fireEvent.click(screen.getByTestId('create-desktop-sandbox'));
    expect(create).toHaveBeenCalledTimes(1);
    expect(screen.queryByTestId('take-control')).toBeNull();
    expect(rfbs).toHaveLength(0);
  });

  it('only Chromium missing: the desktop can still start, without a browser', async () => {
    const api = new FakeApi({ desktops: { alpha: desktopStatus({ sandbox: 'alpha', placement: 'sandbox', missing: ['chromium'] }) } });
    renderPane(api);
    expect(await screen.findByTestId('desktop-start')).toBeTruthy();
    expect(screen.getByTestId('desktop-missing').textContent).toBe('chromium — the desktop runs without a browser');
  });

  it('a refused placement says why and offers no Start', async () => {
    const api = new FakeApi({
      desktops: { alpha: desktopStatus({ sandbox: 'alpha', placement: 'refused', reason: 'the blind backend has no streams' }) },
    });
    renderPane(api);
    expect((await screen.findByTestId('desktop-reason')).textContent).toBe('the blind backend has no streams');
    expect(screen.getByTestId('desktop-placement').textContent).toBe('refused');
    expect(screen.queryByTestId('desktop-start')).toBeNull();
  });

  it('starts the desktop with progress, then connects noVNC view-only on a fresh ticket', async () => {
    let finish: () => void = () => undefined;
    const api = new FakeApi();
    const realStart = (p: { sandbox: string }) => {
      api.desktops[p.sandbox] = desktopStatus({ sandbox: p.sandbox, running: true, display: ':20', geometry: '1280x800' });
      return api.desktops[p.sandbox]!;
    };
    api.on('desktopStart', (p) => new Promise((r) => (finish = () => r(realStart(p)))));
    renderPane(api);
    fireEvent.click(await screen.findByTestId('desktop-start'));
    expect(await screen.findByText(/Starting Xvnc, Xfce and Chromium/)).toBeTruthy();
    finish();
    await waitFor(() => expect(rfbs).toHaveLength(1));
    const ticket = api.callsOf('screenTicket')[0]!;
    expect(rfbs[0]!.url).toContain('/ws/desktop/alpha?ticket=');
    expect(rfbs[0]!.scaleViewport).toBe(true);
    expect(rfbs[0]!.viewOnly).toBe(true);
    expect(ticket.viewerId).toMatch(/^ui-[0-9a-f]{16}$/);
    act(() => rfbs[0]!.emit('connect'));
    expect(window.__sdeskScreenConnected).toBe(true);
    // No agent has acted on this desktop: nobody to name (not "Agent has control").
    expect((await screen.findByTestId('lease-indicator')).textContent).toBe('Nobody has control · view only');
  });

  it('take control sends this viewer id, makes the screen interactive, and give back returns it', async () => {
    const api = new FakeApi({ desktops: { alpha: desktopStatus({ sandbox: 'alpha', running: true }) } });
    renderPane(api);
    const button = await screen.findByTestId('take-control');
    await waitFor(() => expect(rfbs).toHaveLength(1));
    expect(button.textContent).toBe('Take control');
    fireEvent.click(button);
    await waitFor(() => expect(screen.getByTestId('take-control').textContent).toBe('Give back'));
    // The keyboard stays on the control button (now Give back), not fallen to <body>.
    await waitFor(() => expect(document.activeElement).toBe(screen.getByTestId('take-control')));
    // While the screen has the keyboard, the way out is on the pane.
    expect(screen.getByTestId('keyboard-hint').textContent).toMatch(/Alt\+Shift\+D takes it back/);
    const viewerId = api.callsOf('screenTicket')[0]!.viewerId;
    expect(api.callsOf('takeControl')).toEqual([{ sandbox: 'alpha', viewerId }]);
    expect(screen.getByTestId('lease-indicator').textContent).toBe('You have control');
    expect(rfbs[0]!.viewOnly).toBe(false);
    fireEvent.click(screen.getByTestId('take-control'));
    await waitFor(() => expect(screen.getByTestId('take-control').textContent).toBe('Take control'));
    await waitFor(() => expect(document.activeElement).toBe(screen.getByTestId('take-control')));
    expect(screen.queryByTestId('keyboard-hint')).toBeNull();
    expect(api.callsOf('giveBack')).toEqual([{ sandbox: 'alpha', viewerId }]);
    expect(rfbs[0]!.viewOnly).toBe(true);
  });

  it('another viewer holding the lease is shown as such', async () => {
    const api = new FakeApi({ desktops: { alpha: desktopStatus({ sandbox: 'alpha', running: true }) } });
    api.leases.alpha = { holder: 'human', viewerId: 'someone-else', epoch: 3, since: new Date().toISOString(), reason: null };
    renderPane(api);
    await waitFor(() => expect(screen.getByTestId('lease-indicator').textContent).toBe('Another viewer has control'));
  });

  it('reconnects with a fresh ticket after a lost connection, and disconnects on unmount', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    try {
      const api = new FakeApi({ desktops: { alpha: desktopStatus({ sandbox: 'alpha', running: true }) } });
      const { unmount } = renderPane(api);
      await waitFor(() => expect(rfbs).toHaveLength(1));
      act(() => rfbs[0]!.emit('disconnect', { clean: false }));
      expect(window.__sdeskScreenConnected).toBe(false);
      await act(async () => {
        await vi.advanceTimersByTimeAsync(600);
      });
      await waitFor(() => expect(rfbs).toHaveLength(2));
      const tickets = api.callsOf('screenTicket');
      expect(tickets).toHaveLength(2);
      expect(tickets[1]!.viewerId).toBe(tickets[0]!.viewerId); // same viewer: a held lease survives the drop
      expect(rfbs[1]!.url).not.toBe(rfbs[0]!.url); // single-use tickets: never reused
      unmount();
      expect(rfbs[1]!.disconnected).toBe(true);
      await vi.advanceTimersByTimeAsync(20_000);
      expect(rfbs).toHaveLength(2); // no reconnect after unmount
    } finally {
      vi.useRealTimers();
    }
  });

  it("shows the server's error when starting fails", async () => {
    const api = new FakeApi().fail(
      'desktopStart',
      'placement_refused',
      'no desktop binaries in the sandbox',
      'use sandbox-desk/desktop:latest',
    );
    renderPane(api);
    fireEvent.click(await screen.findByTestId('desktop-start'));
    const alert = await screen.findByText(/no desktop binaries in the sandbox/);
    expect(alert.textContent).toContain('use sandbox-desk/desktop:latest');
  });
});

describe("screen pane: the agent's last action", () => {
  it('shows the frame the agent last acted on, with its click point, over the running screen', async () => {
    const api = new FakeApi({
      desktops: { alpha: desktopStatus({ sandbox: 'alpha', running: true, display: ':20', geometry: '1280x800' }) },
    });
    api.on('desktopLastAction', () => ({
      sandbox: 'alpha',
      at: new Date().toISOString(),
      kind: 'click',
      target: { x: 100, y: 200 },
      pointer: { x: 100, y: 200 },
      screen: { width: 1280, height: 800 },
      frame: { frameId: 'f1', width: 1024, height: 640, image: 'data:image/png;base64,AAAA' },
    }));
    renderPane(api);
    expect((await screen.findByTestId('agent-action-frame')).getAttribute('src')).toBe('data:image/png;base64,AAAA');
    expect(screen.getByTestId('agent-action').textContent).toMatch(/agent click at 100,200/);
  });

  describe('the screen at a readable size', () => {
    const running = () => new FakeApi({ desktops: { alpha: desktopStatus({ sandbox: 'alpha', running: true, geometry: '1280x800' }) } });

    it('by default resizes the remote desktop to the pane, once this viewer has control (fitted until then)', async () => {
      const api = running();
      renderPane(api);
      await waitFor(() => expect(rfbs).toHaveLength(1));
      const rfb = rfbs[0]!;
      expect(screen.getByTestId('screen-mode-resize').getAttribute('aria-checked')).toBe('true');
      expect(rfb).toMatchObject({ viewOnly: true, scaleViewport: true, resizeSession: false, resizeRequests: 0 });
      expect(screen.getByTestId('resize-needs-control')).toBeTruthy();
      fireEvent.click(screen.getByTestId('take-control'));
      await waitFor(() => expect(rfb.viewOnly).toBe(false));
      // Asked a moment later, once the server's input gate has seen the new lease.
      expect(rfb.resizeRequests).toBe(0);
      await waitFor(() => expect(rfb.resizeRequests).toBeGreaterThan(0));
      expect(rfb.resizeSession).toBe(true);
      expect(screen.queryByTestId('resize-needs-control')).toBeNull();
    });

    it('1:1 stops scaling (the pane scrolls) and fit scales without resizing; the choice is remembered', async () => {
      const api = running();
      const view = renderPane(api);
      await waitFor(() => expect(rfbs).toHaveLength(1));
      fireEvent.click(screen.getByTestId('screen-mode-actual'));
      expect(rfbs[0]).toMatchObject({ scaleViewport: false, clipViewport: false, resizeSession: false });
      expect(screen.getByTestId('vnc-screen').getAttribute('data-mode')).toBe('actual');
      fireEvent.click(screen.getByTestId('screen-mode-fit'));
      expect(rfbs[0]).toMatchObject({ scaleViewport: true, resizeSession: false });
      view.unmount();
      renderPane(api);
      await waitFor(() => expect(rfbs).toHaveLength(2));
      expect(screen.getByTestId('screen-mode-fit').getAttribute('aria-checked')).toBe('true');
      expect(rfbs[1]).toMatchObject({ scaleViewport: true, resizeSession: false });
    });

    it('fullscreen asks for the screen itself; pop out opens a tab with just the screen, without a ticket in it', async () => {
      const api = running();
      const open = vi.fn(() => ({}) as Window);
      vi.stubGlobal('open', open);
      try {
        renderPane(api);
        await waitFor(() => expect(rfbs).toHaveLength(1));
        const body = screen.getByTestId('screen-body');
        const requestFullscreen = vi.fn(() => Promise.resolve());
        body.requestFullscreen = requestFullscreen;
        fireEvent.click(screen.getByTestId('screen-fullscreen'));
        expect(requestFullscreen).toHaveBeenCalledTimes(1);
        fireEvent.click(screen.getByTestId('screen-popout'));
        expect(open).toHaveBeenCalledWith(expect.stringMatching(/\?screen=alpha$/), '_blank');
      } finally {
        vi.unstubAllGlobals();
      }
    });

    it('the popped-out page has no Pop out of its own', async () => {
      render(
        <ApiProvider api={running()}>
          <ScreenPane sandbox="alpha" visible standalone />
        </ApiProvider>,
      );
      expect(await screen.findByTestId('screen-toolbar')).toBeTruthy();
      expect(screen.queryByTestId('screen-popout')).toBeNull();
    });

    it('a click on a view-only screen says so on the screen, with Take control; control draws a frame', async () => {
      const api = running();
      renderPane(api);
      await waitFor(() => expect(rfbs).toHaveLength(1));
      const body = screen.getByTestId('screen-body');
      expect(body.className).not.toMatch(/has-control/);
      fireEvent.pointerDown(screen.getByTestId('vnc-screen'));
      const hint = await screen.findByTestId('view-only-hint');
      expect(hint.textContent).toMatch(/View only/);
      fireEvent.click(within(hint).getByRole('button', { name: 'Take control' }));
      await waitFor(() => expect(api.callsOf('takeControl')).toHaveLength(1));
      await waitFor(() => expect(body.className).toMatch(/has-control/));
      expect(screen.queryByTestId('view-only-hint')).toBeNull();
      // In control, a click is input, not a reason to say "view only".
      fireEvent.pointerDown(screen.getByTestId('vnc-screen'));
      expect(screen.queryByTestId('view-only-hint')).toBeNull();
    });
  });
});

describe('the agent, as the person sees it (issue 36)', () => {
  const lastClick = (over: Partial<AgentActionView> = {}): AgentActionView => ({
    sandbox: 'alpha',
    at: new Date().toISOString(),
    kind: 'click',
    target: { x: 100, y: 200 },
    pointer: { x: 100, y: 200 },
    screen: { width: 1280, height: 800 },
    frame: null,
    session: 'planner',
    ...over,
  });
  const clients: EventsClient[] = [];
  beforeEach(() => {
    FakeEventSocket.reset();
    for (const c of clients.splice(0)) c.close();
  });
  /** The pane with a live event stream (the core's pushed events), as in the window. */
  const renderLive = async (api: FakeApi) => {
    api.on('eventsTicket', () => ({ url: 'ws://127.0.0.1:1/ws/events?ticket=t', ticket: 't' }));
    const events = new EventsClient({ api, WebSocket: FakeEventSocket as unknown as typeof WebSocket, backoff: [10_000] });
    clients.push(events);
    render(
      <ApiProvider api={api}>
        <EventsProvider events={events}>
          <ScreenPane sandbox="alpha" visible />
        </EventsProvider>
      </ApiProvider>,
    );
    await waitFor(() => expect(FakeEventSocket.opened.length).toBe(1));
    act(() => FakeEventSocket.last().hello('e1', 0));
    await waitFor(() => expect(rfbs).toHaveLength(1));
  };

  it('the pill says who holds control: nobody before any agent acted, the agent by its session, you', async () => {
    const api = new FakeApi({ desktops: { alpha: desktopStatus({ sandbox: 'alpha', running: true }) } });
    renderPane(api);
    const pill = await screen.findByTestId('lease-indicator');
    await waitFor(() => expect(pill.textContent).toBe('Nobody has control · view only'));
    expect(pill.textContent).not.toMatch(/Agent/);

    api.lastActions.alpha = lastClick({ at: '2026-01-01T00:00:00.000Z' });
    // The agent's action is pushed as an event; without a stream the pane re-reads on its interval.
    await waitFor(() => expect(screen.getByTestId('lease-indicator').textContent).toBe('Agent (session planner) has control · view only'), {
      timeout: 3000,
    });
    expect(screen.getByTestId('lease-indicator').getAttribute('title')).toMatch(/^last: click at 100,200/);

    fireEvent.click(screen.getByTestId('take-control'));
    await waitFor(() => expect(screen.getByTestId('lease-indicator').textContent).toBe('You have control'));
  });

  it('a refused agent action shows on the screen as one notice, not a stack; it goes on ×', async () => {
    const api = new FakeApi({ desktops: { alpha: desktopStatus({ sandbox: 'alpha', running: true }) } });
    await renderLive(api);
    fireEvent.click(await screen.findByTestId('take-control'));
    await waitFor(() => expect(screen.getByTestId('lease-indicator').textContent).toBe('You have control'));
    const viewerId = api.callsOf('takeControl')[0]!.viewerId;
    const refusal = {
      sandbox: 'alpha',
      at: '2026-01-01T00:00:01.000Z',
      kind: 'click',
      target: { x: 100, y: 200 },
      session: 'planner',
      viewerId,
      message: "a human holds the control lease of sandbox alpha's desktop",
    };
    act(() => FakeEventSocket.last().event({ topic: 'agentRefused', sandbox: 'alpha', seq: 1, refusal }));
    const notice = await screen.findByTestId('agent-refusal');
    expect(notice.textContent).toMatch(/^Agent \(session planner\) tried to click at 100,200 — refused: you have control/);
    // Another sandbox's refusal is not this pane's; a second one here replaces the first.
    act(() => FakeEventSocket.last().event({ topic: 'agentRefused', sandbox: 'beta', seq: 2, refusal: { ...refusal, sandbox: 'beta' } }));
    act(() =>
      FakeEventSocket.last().event({
        topic: 'agentRefused',
        sandbox: 'alpha',
        seq: 3,
        refusal: { ...refusal, kind: 'type', target: null },
      }),
    );
    expect(screen.getAllByTestId('agent-refusal')).toHaveLength(1);
    expect(screen.getByTestId('agent-refusal').textContent).toMatch(
      /^Agent \(session planner\) tried to type — refused: you have control \(2 times\)/,
    );
    fireEvent.click(within(screen.getByTestId('agent-refusal')).getByRole('button', { name: 'Dismiss' }));
    expect(screen.queryByTestId('agent-refusal')).toBeNull();
  });

  it("an agent click is drawn where it landed on the live screen, at this viewer's scale", async () => {
    const api = new FakeApi({ desktops: { alpha: desktopStatus({ sandbox: 'alpha', running: true }) } });
    await renderLive(api);
    // The 1280x800 screen drawn at half size, 10 px in and 20 px down in the pane (fit mode, letterboxed).
    const body = screen.getByTestId('screen-body');
    const canvas = body.querySelector('.vnc-screen canvas')!;
    const box = (left: number, top: number, width: number, height: number) => () => ({ left, top, width, height }) as DOMRect;
    body.getBoundingClientRect = box(0, 0, 700, 500);
    canvas.getBoundingClientRect = box(10, 20, 640, 400);
    const action = {
      at: new Date().toISOString(),
      kind: 'click',
      target: { x: 100, y: 200 },
      screen: { width: 1280, height: 800 },
      session: 'planner',
    };
    // The pane also re-reads the last action on the event: the same click, drawn once.
    api.lastActions.alpha = lastClick({ at: action.at });
    act(() => FakeEventSocket.last().event({ topic: 'agentAction', sandbox: 'alpha', seq: 1, action }));
    const mark = await screen.findByTestId('agent-click');
    await waitFor(() => expect(api.callsOf('desktopLastAction').length).toBeGreaterThan(1));
    // The pixel's centre: 10 + 100.5 / 2, 20 + 200.5 / 2.
    expect(mark.style.left).toBe('60.25px');
    expect(mark.style.top).toBe('120.25px');
    expect(mark.getAttribute('title')).toBe('session planner: click at 100,200');
    expect(screen.getAllByTestId('agent-click')).toHaveLength(1);
    // A click without a frame is the ring only: the live screen is not dimmed under the frame overlay.
    expect(screen.queryByTestId('agent-action')).toBeNull();
    // Typing has no point: no marker for it; the click's marker fades and goes.
    act(() =>
      FakeEventSocket.last().event({ topic: 'agentAction', sandbox: 'alpha', seq: 2, action: { ...action, kind: 'type', target: null } }),
    );
    expect(screen.getAllByTestId('agent-click')).toHaveLength(1);
    await waitFor(() => expect(screen.queryByTestId('agent-click')).toBeNull(), { timeout: 3000 });
  });
});
