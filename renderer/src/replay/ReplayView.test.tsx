import '../test/setup.js';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiProvider } from '../app/api-context.js';
import { desktopStatus, FakeApi, sandboxInfo } from '../test/fake-api.js';
import { FakeReplay, iso } from '../test/fake-replay.js';
import { forgetExportForms } from './kept-export-form.js';
import { ReplayView } from './ReplayView.js';

// xterm.js needs a layout jsdom has not: a stand-in that keeps what was written (and resets).
const written: { text: string; resets: number } = { text: '', resets: 0 };
vi.mock('@xterm/xterm', () => ({
  Terminal: class {
    cols = 80;
    rows = 24;
    open() {}
    write(s: string) {
      written.text += s;
    }
    reset() {
      written.text = '';
      written.resets++;
    }
    resize() {}
    dispose() {}
  },
}));

beforeEach(() => {
  forgetExportForms();
  written.text = '';
  written.resets = 0;
});

function setup(tweak: (r: FakeReplay, base: FakeApi) => void = () => undefined): FakeReplay & { unmount: () => void } {
  const base = new FakeApi({
    sandboxes: [sandboxInfo({ name: 'box' })],
    desktops: {
      box: Object.assign(desktopStatus({ sandbox: 'box', running: true }), {
        recording: { on: true, bytes: 100000, since: iso(0), warning: null as string | null },
      }),
    },
  });
  const api = new FakeReplay(base);
  tweak(api, base);
  const { unmount } = render(
    <ApiProvider api={api}>
      <ReplayView sandbox="box" visible />
    </ApiProvider>,
  );
  return Object.assign(api, { unmount });
}

const lastFrameAt = (api: FakeReplay) => (api.callsOf('replayFrame').at(-1) as { at: string } | undefined)?.at;

describe('the replay view', () => {
  it('lists each call and command at its time with its cwd, warnings and exit', async () => {
    setup();
    const rows = await screen.findAllByTestId('replay-event');
    expect(rows).toHaveLength(4);
    expect(within(rows[0]!).getByTestId('replay-event-time').textContent).toBe('0:02.0');
    expect(within(rows[0]!).getByTestId('replay-event-summary').textContent).toBe('run_command: cd /tmp/proj');
    expect(within(rows[0]!).getByTestId('replay-event-cwd').textContent).toBe('/home/dev → /tmp/proj');
    expect(within(rows[3]!).getByTestId('replay-event-cwd').textContent).toBe('/tmp/proj');
    expect(within(rows[3]!).getByTestId('replay-event-warning').textContent).toMatch(/dead cwd walked up/);
    expect(rows[3]!.textContent).toMatch(/exit 2/);
    expect(screen.getAllByTestId('replay-tick')).toHaveLength(4);
  });

  it('opens at the end: the screen at the end, the whole terminal', async () => {
    const api = setup();
    await waitFor(() => expect(lastFrameAt(api)).toBe(iso(20)));
    expect((await screen.findByTestId<HTMLImageElement>('replay-frame')).src).toMatch(/^data:image\/png;base64,/);
    await waitFor(() => expect(written.text).toContain('ls: cannot access nope'));
  });

  it('a jump to an action shows the frame it used, with its click point drawn', async () => {
    const api = setup();
    const rows = await screen.findAllByTestId('replay-event');
    fireEvent.click(within(rows[2]!).getByRole('button'));
    await waitFor(() => expect(lastFrameAt(api)).toBe(iso(9)));
    const dot = await screen.findByTestId('replay-point');
    // 640 of 1280 across (the frame is at scale 0.5): the middle.
    expect(dot.style.left).toBe(`${(100 * 640.5 * 0.5) / 640}%`);
    expect(rows[2]!.querySelector('button')!.className).toMatch(/selected/);
  });

  it('a jump back to the cd resets the terminal and shows only what was there by then', async () => {
    setup();
    const rows = await screen.findAllByTestId('replay-event');
    await waitFor(() => expect(written.text).toContain('ls nope'));
    fireEvent.click(within(rows[0]!).getByRole('button'));
    await waitFor(() => expect(written.resets).toBe(1));
    expect(written.text).toBe('');
    // The cd's output comes 0.1 s after the call started: → to the next event shows it.
    fireEvent.keyDown(screen.getByTestId('replay-view'), { key: 'ArrowRight' });
    await waitFor(() => expect(written.text).toBe('$ cd /tmp/proj\r\n'));
  });

  it('keys: ←/→ step between events, Home/End, 1/4/6 pick the speed', async () => {
    const api = setup();
    const view = await screen.findByTestId('replay-view');
    await screen.findAllByTestId('replay-event');
    fireEvent.keyDown(view, { key: 'Home' });
    await waitFor(() => expect(lastFrameAt(api)).toBe(iso(0)));
    fireEvent.keyDown(view, { key: 'ArrowRight' });
    await waitFor(() => expect(lastFrameAt(api)).toBe(iso(2)));
    fireEvent.keyDown(view, { key: 'ArrowRight' });
    await waitFor(() => expect(lastFrameAt(api)).toBe(iso(6)));
    fireEvent.keyDown(view, { key: 'ArrowLeft' });
    await waitFor(() => expect(lastFrameAt(api)).toBe(iso(2)));
    fireEvent.keyDown(view, { key: 'End' });
    await waitFor(() => expect(lastFrameAt(api)).toBe(iso(20)));
    fireEvent.keyDown(view, { key: '6' });
    expect(screen.getByTestId('replay-speed-16').getAttribute('aria-pressed')).toBe('true');
    fireEvent.keyDown(view, { key: '4' });
    expect(screen.getByTestId('replay-speed-4').getAttribute('aria-pressed')).toBe('true');
    expect(screen.getByTestId('replay-help').textContent).toMatch(/Space.*play\/pause/);
  });

  it('Space plays from the start (at the end) and the time moves on at the chosen speed', async () => {
    setup();
    const view = await screen.findByTestId('replay-view');
    await screen.findAllByTestId('replay-event');
    const slider = screen.getByTestId<HTMLInputElement>('replay-scrubber');
    expect(slider.value).toBe('20000');
    fireEvent.keyDown(view, { key: '6' });
    fireEvent.keyDown(view, { key: ' ' });
    expect(screen.getByTestId('replay-play').textContent).toBe('Pause');
    // From the start, moving on (16×: the 20 s run plays in about a second and a quarter).
    await waitFor(() => expect(Number(slider.value)).toBeGreaterThan(2000));
    expect(Number(slider.value)).toBeLessThan(20000);
    fireEvent.keyDown(view, { key: ' ' });
    expect(screen.getByTestId('replay-play').textContent).toBe('Play');
    const paused = slider.value;
    await new Promise((r) => setTimeout(r, 300));
    expect(slider.value).toBe(paused);
  });

  it('dragging the scrubber asks for one frame once it rests, and keeps the last image meanwhile', async () => {
    const api = setup();
    const slider = await screen.findByTestId<HTMLInputElement>('replay-scrubber');
    await screen.findByTestId('replay-frame');
    const before = api.callsOf('replayFrame').length;
    fireEvent.pointerDown(slider);
    for (const ms of [1000, 2000, 3000, 4000, 5000]) fireEvent.change(slider, { target: { value: String(ms) } });
    expect(screen.getByTestId('replay-frame')).toBeTruthy();
    await waitFor(() => expect(lastFrameAt(api)).toBe(iso(5)));
    expect(api.callsOf('replayFrame').length - before).toBe(1);
    fireEvent.pointerUp(slider);
    expect(slider.getAttribute('aria-label')).toBe('Replay time');
    expect(slider.getAttribute('aria-valuetext')).toMatch(/^0:05\.0 of 0:20\.0/);
  });

  it('before the screen recording began: its first frame, and a note saying when it began', async () => {
    const api = setup((r) => {
      r.recording.screen = { ...r.recording.screen!, startedAt: iso(3), endedAt: iso(18) };
    });
    await screen.findAllByTestId('replay-event');
    fireEvent.keyDown(screen.getByTestId('replay-view'), { key: 'Home' });
    await waitFor(() => expect(lastFrameAt(api)).toBe(iso(3)));
    expect(screen.getByTestId('replay-screen-before').textContent).toMatch(/begins at 0:03\.0/);
    fireEvent.keyDown(screen.getByTestId('replay-view'), { key: 'End' });
    // After its last update the screen showed that update: asked at the screen's end, not the run's.
    await waitFor(() => expect(lastFrameAt(api)).toBe(iso(18)));
    expect(screen.queryByTestId('replay-screen-before')).toBeNull();
  });

  it('a frame that fails says why and keeps the image it had', async () => {
    const api = setup();
    await screen.findByTestId('replay-frame');
    api.on('replayFrame', () => {
      throw Object.assign(new Error('no screen here: the recording was cut at 10:00:20'), { code: 'invalid_input' });
    });
    fireEvent.keyDown(screen.getByTestId('replay-view'), { key: 'Home' });
    expect((await screen.findByTestId('replay-frame-error')).textContent).toMatch(/recording was cut/);
    expect(screen.getByTestId('replay-frame')).toBeTruthy();
  });

  it("shows ● REC on the screen and the list while recording, and the recorder's warning", async () => {
    setup((_r, base) => {
      (base.desktops.box as unknown as { recording: { warning: string | null } }).recording.warning =
        'screen recording stopped: disk full (the desktop keeps running)';
    });
    expect(await screen.findByTestId('replay-rec-screen')).toBeTruthy();
    expect(screen.getByTestId('replay-rec-list')).toBeTruthy();
    expect(screen.getByTestId('replay-rec-warning').textContent).toMatch(/disk full/);
  });

  it('no REC badge when the desktop is not recording (or the core has no indicator)', async () => {
    setup((_r, base) => {
      base.desktops.box = desktopStatus({ sandbox: 'box', running: true });
    });
    await screen.findAllByTestId('replay-event');
    expect(screen.queryByTestId('replay-rec-screen')).toBeNull();
  });

  it('several terminals: a picker, and a jump to a command picks its terminal', async () => {
    const api = setup((r) => {
      r.recording.terminals.push({
        terminalId: 'dd44ee55ff66',
        session: 'work',
        startedAt: iso(1),
        endedAt: iso(20),
        cols: 80,
        rows: 24,
        bytes: 10,
      });
      r.casts.dd44ee55ff66 = [
        JSON.stringify({ version: 2, width: 80, height: 24 }),
        JSON.stringify([0.5, 'o', 'second terminal\r\n']),
      ].join('\n');
    });
    const pick = await screen.findByTestId<HTMLSelectElement>('replay-terminal-pick');
    expect(pick.options).toHaveLength(2);
    fireEvent.change(pick, { target: { value: 'dd44ee55ff66' } });
    await waitFor(() => expect(written.text).toContain('second terminal'));
    fireEvent.click(within(screen.getAllByTestId('replay-event')[0]!).getByRole('button'));
    await waitFor(() => expect(pick.value).toBe('aa11bb22cc33'));
    expect(api.callsOf('replayCast')).toContainEqual({ sandbox: 'box', terminalId: 'aa11bb22cc33' });
  });

  it('nothing recorded: says so and how recording starts', async () => {
    setup((r) => {
      r.on('replayList', () => ({ recordings: [] }));
      r.on('replayEvents', (p) => ({ sandbox: p.sandbox, startedAt: null, endedAt: null, events: [] }));
    });
    expect((await screen.findByTestId('replay-empty')).textContent).toMatch(/--no-record/);
  });

  it('a core without replay says so instead of an empty view', async () => {
    setup((r) => {
      r.on('replayEvents', () => {
        throw Object.assign(new Error('unknown method replayEvents'), { code: 'invalid_input' });
      });
    });
    expect((await screen.findByTestId('replay-error')).textContent).toMatch(/unknown method replayEvents/);
  });
});

describe('export from the replay view', () => {
  it('asks for a folder, runs replayExport and lists what it wrote', async () => {
    const api = setup();
    fireEvent.change(await screen.findByTestId('replay-export-out'), { target: { value: '/tmp/out-1' } });
    fireEvent.change(screen.getByTestId('replay-export-format'), { target: { value: 'webm' } });
    fireEvent.click(screen.getByTestId('replay-export'));
    const result = await screen.findByTestId('replay-export-result');
    expect(api.callsOf('replayExport')).toEqual([{ sandbox: 'box', out: '/tmp/out-1', format: 'webm' }]);
    expect(within(result).getByTestId('replay-export-video').textContent).toMatch(/\/tmp\/out-1\/screen\.webm \(20\.0 s, 1280×800\)/);
    expect(within(result).getByTestId('replay-export-cast').textContent).toBe('/tmp/out-1/aa11bb22cc33.cast');
  });

  it('a relative path is refused in the form', async () => {
    setup();
    fireEvent.change(await screen.findByTestId('replay-export-out'), { target: { value: 'out' } });
    expect(screen.getByText(/absolute folder path/)).toBeTruthy();
    expect(screen.getByTestId<HTMLButtonElement>('replay-export').disabled).toBe(true);
  });

  it("a second export of the same sandbox is refused with the core's message", async () => {
    setup((r) => {
      r.on('replayExport', () => {
        throw Object.assign(new Error('an export of box is already running'), { code: 'busy', hint: 'wait for it (see the task list)' });
      });
    });
    fireEvent.change(await screen.findByTestId('replay-export-out'), { target: { value: '/tmp/out-2' } });
    fireEvent.click(screen.getByTestId('replay-export'));
    expect((await screen.findByTestId('replay-export-error')).textContent).toMatch(/already running/);
  });

  it('exports a range given as positions in the recording (as the scrubber shows them) or as the CLI takes them (ISO)', async () => {
    const api = setup();
    fireEvent.change(await screen.findByTestId('replay-export-out'), { target: { value: '/tmp/out-3' } });
    fireEvent.change(screen.getByTestId('replay-export-from'), { target: { value: '0:05' } });
    fireEvent.change(screen.getByTestId('replay-export-to'), { target: { value: iso(15) } });
    expect(screen.queryByTestId('replay-export-range-problem')).toBeNull();
    fireEvent.click(screen.getByTestId('replay-export'));
    await screen.findByTestId('replay-export-result');
    expect(api.callsOf('replayExport')).toEqual([{ sandbox: 'box', out: '/tmp/out-3', format: 'mp4', from: iso(5), to: iso(15) }]);
  });

  it('a bad range says what is wrong and what to do as it is typed, and nothing is sent', async () => {
    const api = setup();
    fireEvent.change(await screen.findByTestId('replay-export-out'), { target: { value: '/tmp/out-4' } });
    const problem = () => screen.getByTestId('replay-export-range-problem').textContent;
    fireEvent.change(screen.getByTestId('replay-export-from'), { target: { value: '0:15' } });
    fireEvent.change(screen.getByTestId('replay-export-to'), { target: { value: '0:05' } });
    expect(problem()).toBe('From is after To. Give a From before the To (the recording spans 0:00.0 – 0:20.0).');
    fireEvent.change(screen.getByTestId('replay-export-to'), { target: { value: '0:15' } });
    expect(problem()).toMatch(/^The range is empty/);
    fireEvent.change(screen.getByTestId('replay-export-from'), { target: { value: '5:00' } });
    fireEvent.change(screen.getByTestId('replay-export-to'), { target: { value: '' } });
    expect(problem()).toBe(
      'The range is outside the recording. Give times inside it (the recording spans 0:00.0 – 0:20.0), or leave From and To empty for all of it.',
    );
    fireEvent.change(screen.getByTestId('replay-export-from'), { target: { value: 'yesterday' } });
    expect(problem()).toMatch(
      /^From "yesterday" is not a time\. Give a position in the recording \(1:30\), an ISO 8601 time .* or a duration ago \(90s, 10m, 2h, 1d\)\.$/,
    );
    expect(screen.getByTestId<HTMLButtonElement>('replay-export').disabled).toBe(true);
    fireEvent.submit(screen.getByTestId('replay-export').closest('form')!);
    expect(api.callsOf('replayExport')).toEqual([]);
  });

  it('keeps the folder, format and range when the tab changes (the view unmounts and comes back)', async () => {
    const first = setup();
    fireEvent.change(await screen.findByTestId('replay-export-out'), { target: { value: '/tmp/kept' } });
    fireEvent.change(screen.getByTestId('replay-export-format'), { target: { value: 'webm' } });
    fireEvent.change(screen.getByTestId('replay-export-from'), { target: { value: '0:03' } });
    fireEvent.change(screen.getByTestId('replay-export-to'), { target: { value: '0:09' } });
    first.unmount();
    setup();
    expect((await screen.findByTestId<HTMLInputElement>('replay-export-out')).value).toBe('/tmp/kept');
    expect(screen.getByTestId<HTMLSelectElement>('replay-export-format').value).toBe('webm');
    expect(screen.getByTestId<HTMLInputElement>('replay-export-from').value).toBe('0:03');
    expect(screen.getByTestId<HTMLInputElement>('replay-export-to').value).toBe('0:09');
  });

  it('the gaps of an export (drawn as cards) are listed under its video', async () => {
    setup((r) => {
      r.on('replayExport', (p) => ({
        dir: p.out,
        video: {
          file: `${p.out}/screen.mp4`,
          format: 'mp4' as const,
          durationMs: 20000,
          width: 1280,
          height: 800,
          gaps: [{ from: iso(4), to: iso(12), what: 'desktop not running (stopped, then started again)' }],
        },
        casts: [],
        events: `${p.out}/events.jsonl`,
        from: iso(0),
        to: iso(20),
      }));
    });
    fireEvent.change(await screen.findByTestId('replay-export-out'), { target: { value: '/tmp/out-5' } });
    fireEvent.click(screen.getByTestId('replay-export'));
    expect((await screen.findByTestId('replay-export-gap')).textContent).toBe(
      `not recorded ${iso(4)} – ${iso(12)} (desktop not running (stopped, then started again)): shown as a card in the video`,
    );
  });
});
