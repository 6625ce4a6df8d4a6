import '../test/setup.js';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ReplayEvent } from '../../../src/shared/replay-types.js';
import { ApiProvider } from '../app/api-context.js';
import { desktopStatus, FakeApi, sandboxInfo } from '../test/fake-api.js';
import { FakeReplay, iso } from '../test/fake-replay.js';
import { ReplayView } from './ReplayView.js';

// xterm.js needs a layout jsdom has not (the view's terminal pane): a stand-in.
vi.mock('@xterm/xterm', () => ({
  Terminal: class {
    cols = 80;
    rows = 24;
    open() {}
    write() {}
    reset() {}
    resize() {}
    dispose() {}
  },
}));

function setup(tweak: (r: FakeReplay) => void = () => undefined) {
  const base = new FakeApi({
    sandboxes: [sandboxInfo({ name: 'box' })],
    desktops: { box: desktopStatus({ sandbox: 'box', running: true }) },
  });
  const api = new FakeReplay(base);
  tweak(api);
  render(
    <ApiProvider api={api}>
      <ReplayView sandbox="box" visible />
    </ApiProvider>,
  );
  return api;
}

/** What the core answers for an MCP exec now (issue 36): the call and its command as one event. */
const mergedExec: ReplayEvent = {
  at: iso(2),
  kind: 'agentCall',
  summary: 'execute_shell_command: cd /tmp/proj',
  tool: 'execute_shell_command',
  session: 'agent',
  cwdUsed: '/home/dev',
  cwdObserved: '/tmp/proj',
  exitCode: 0,
  warnings: [],
};

describe('the replay view, readable (issue 36 item 5)', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('an MCP exec is one row: its command, the session it ran in, its cwd used → observed', async () => {
    setup((r) => {
      r.events = [
        mergedExec,
        { at: iso(14), kind: 'command', summary: 'make', session: 'default', cwdUsed: '/w', cwdObserved: '/w', exitCode: 0 },
      ];
    });
    const rows = await screen.findAllByTestId('replay-event');
    expect(rows).toHaveLength(2);
    expect(within(rows[0]!).getByTestId('replay-event-summary').textContent).toBe('execute_shell_command: cd /tmp/proj');
    expect(within(rows[0]!).getByTestId('replay-event-session').textContent).toBe('session agent');
    expect(within(rows[0]!).getByTestId('replay-event-cwd').textContent).toBe('/home/dev → /tmp/proj');
    // A CLI command (no call) names its session too.
    expect(within(rows[1]!).getByTestId('replay-event-session').textContent).toBe('session default');
    // Events that belong to no session (a lease change, a checkpoint) say none.
    expect(screen.getAllByTestId('replay-event-session')).toHaveLength(2);
  });

  it('restore, fork and network policy changes are rows of their own kind', async () => {
    setup((r) => {
      r.events = [
        { at: iso(3), kind: 'checkpoint', summary: 'checkpoint before' },
        { at: iso(5), kind: 'restore', summary: 'restored to checkpoint cp1' },
        { at: iso(7), kind: 'fork', summary: 'forked checkpoint cp1 as try-1' },
        { at: iso(9), kind: 'network', summary: 'network policy: allow example.com' },
      ];
    });
    const rows = await screen.findAllByTestId('replay-event');
    expect(rows.map((r) => [r.querySelector('.pill')!.textContent, within(r).getByTestId('replay-event-summary').textContent])).toEqual([
      ['checkpoint', 'checkpoint before'],
      ['restore', 'restored to checkpoint cp1'],
      ['fork', 'forked checkpoint cp1 as try-1'],
      ['network', 'network policy: allow example.com'],
    ]);
    expect(screen.getAllByTestId('replay-tick').map((t) => t.className)).toEqual([
      'replay-tick replay-tick-checkpoint',
      'replay-tick replay-tick-restore',
      'replay-tick replay-tick-fork',
      'replay-tick replay-tick-network',
    ]);
  });

  it('the time readout: both sides in one shape (tenths on each), minutes padded to the total’s', async () => {
    setup((r) => {
      // A run of 12:11.4: the readout must not read "9:11.4 / 9:11" or jump in width while it plays.
      r.recording = { ...r.recording, endedAt: new Date(Date.parse(iso(0)) + 731_400).toISOString() };
      r.on('replayEvents', (p) => ({ sandbox: p.sandbox, startedAt: iso(0), endedAt: r.recording.endedAt, events: r.events }));
    });
    const time = await screen.findByTestId('replay-time');
    await waitFor(() => expect(time.textContent).toBe('12:11.4 / 12:11.4'));
    fireEvent.keyDown(screen.getByTestId('replay-view'), { key: 'Home' });
    await waitFor(() => expect(time.textContent).toBe('00:00.0 / 12:11.4'));
    expect(time.className).toMatch(/replay-time/);
  });

  it('16× playback asks for the frames between keyframes: one at a time, at most every 125 ms, at least 4 a second, at the pane’s size', async () => {
    // The stage (the frame's box) is 400 CSS pixels wide; jsdom lays nothing out.
    Object.defineProperty(HTMLElement.prototype, 'clientWidth', {
      configurable: true,
      get(this: HTMLElement) {
        return this.classList.contains('replay-stage') ? 400 : 0;
      },
    });
    try {
      const asked: Array<{ at: number; t: number; maxWidth: number | undefined }> = [];
      let inFlight = 0;
      let most = 0;
      const api = setup((r) => {
        r.recording = { ...r.recording, endedAt: iso(40), screen: { ...r.recording.screen!, endedAt: iso(40) } };
        r.on('replayEvents', (p) => ({ sandbox: p.sandbox, startedAt: iso(0), endedAt: iso(40), events: r.events }));
        r.on('replayFrame', async (p) => {
          const playing = document.querySelector('[data-testid="replay-play"]')?.textContent === 'Pause';
          if (playing) asked.push({ at: performance.now(), t: Date.parse(p.at), maxWidth: p.maxWidth });
          inFlight++;
          most = Math.max(most, inFlight);
          // A core that takes 40 ms to decode and draw a frame.
          await new Promise((resolve) => setTimeout(resolve, 40));
          inFlight--;
          const scale = p.maxWidth ? p.maxWidth / 1280 : 1;
          return {
            sandbox: p.sandbox,
            askedAt: p.at,
            at: p.at,
            width: Math.round(1280 * scale),
            height: Math.round(800 * scale),
            scale,
            format: 'png',
            data: 'iVBORw0KGgo=',
          };
        });
      });
      const view = await screen.findByTestId('replay-view');
      await screen.findByTestId('replay-frame');
      fireEvent.keyDown(view, { key: '6' });
      fireEvent.keyDown(view, { key: ' ' });
      // 40 s at 16×: 2.5 s of playing; a second and a half of it is enough to judge.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      // Paused while a playing frame is on its way: the frame at the stop must still come after it.
      while (inFlight === 0) await new Promise((resolve) => setTimeout(resolve, 2));
      fireEvent.keyDown(view, { key: ' ' });
      expect(screen.getByTestId('replay-play').textContent).toBe('Play');
      const playedMs = asked.at(-1)!.at - asked[0]!.at + 125;
      const perSecond = (1000 * asked.length) / playedMs;
      expect(perSecond).toBeGreaterThanOrEqual(4);
      expect(perSecond).toBeLessThanOrEqual(8.5);
      expect(most).toBe(1);
      // Every 125 ms on average (a single gap may look shorter by the renders between the ask and this fake).
      expect((asked.at(-1)!.at - asked[0]!.at) / (asked.length - 1)).toBeGreaterThanOrEqual(120);
      for (let i = 1; i < asked.length; i++) {
        expect(asked[i]!.at - asked[i - 1]!.at).toBeGreaterThanOrEqual(95);
        // Forward through the run, a frame every ~2 recorded seconds at 16× (between the keyframes).
        expect(asked[i]!.t).toBeGreaterThan(asked[i - 1]!.t);
      }
      expect(asked.every((a) => a.maxWidth === 400)).toBe(true);
      // Paused: the frame at the stop, at the screen's full size.
      await waitFor(() => expect(api.callsOf('replayFrame').at(-1)).not.toHaveProperty('maxWidth'));
    } finally {
      // Back to jsdom's own (on Element.prototype).
      delete (HTMLElement.prototype as { clientWidth?: number }).clientWidth;
    }
  });
});
