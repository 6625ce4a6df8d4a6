/**
 * Issue 16's "Done means", end to end: an agent (the MCP SDK's own Client, on the window's core) runs
 * `cd /tmp/proj`, opens a page on the sandbox's desktop, clicks into it and types; a person's terminal
 * in the window prints a line. Then the Replay view (browser mode, real Chromium) shows each call at
 * its time with cwd /tmp/proj, the recorded screen at that moment — its pixels compared with the
 * screenshot the agent took live then — and the terminal line; its Export writes a video ffprobe reads
 * and `.cast` files whose lines are asciicast v2. Real Docker desktop, Xvnc, ffmpeg.
 * Then the view at 1280×720 and 1440×900: scrubber, frame and first event in view at once (issue 36).
 * Screenshots: replay-view.png, replay-1280x720.png, replay-1440x900.png (docs/ with
 * SDESK_UPDATE_DOCS=1, else test/artifacts/).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { chromium, type Browser, type Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpServer } from '../../src/mcp/mcp-server.js';
import type { ReplayEvent, ReplayFrame } from '../../src/shared/replay-types.js';
import { seriousViolations } from './axe.js';
import { uniqueName } from './helpers.js';
import { ARTIFACTS, openUi, type UiHarness } from './ui-harness.js';
import { bufferOf } from './ui-terminal-text.js';

const ROOT = resolve(import.meta.dirname, '../..');
const DOCS = process.env.SDESK_UPDATE_DOCS === '1' ? join(ROOT, 'docs') : ARTIFACTS;

type ToolResult = {
  isError?: boolean;
  content: { type: string; text?: string; data?: string }[];
  structuredContent?: Record<string, unknown>;
};
const textOf = (r: ToolResult) => r.content.find((c) => c.type === 'text')?.text ?? '';
const jsonOf = (r: ToolResult) => JSON.parse(textOf(r)) as Record<string, unknown>;

/** Pixels that differ (any channel by more than 8 of 255) between two images of the same size, as a fraction. */
async function pixelDifference(a: Buffer, b: Buffer): Promise<{ fraction: number; width: number; height: number }> {
  const [ra, rb] = await Promise.all([a, b].map((x) => sharp(x).removeAlpha().raw().toBuffer({ resolveWithObject: true })));
  expect([rb!.info.width, rb!.info.height]).toEqual([ra!.info.width, ra!.info.height]);
  let differ = 0;
  const n = ra!.info.width * ra!.info.height;
  for (let i = 0; i < n; i++) {
    const o = i * 3;
    if (
      Math.abs(ra!.data[o]! - rb!.data[o]!) > 8 ||
      Math.abs(ra!.data[o + 1]! - rb!.data[o + 1]!) > 8 ||
      Math.abs(ra!.data[o + 2]! - rb!.data[o + 2]!) > 8
    )
      differ++;
  }
  return { fraction: differ / n, width: ra!.info.width, height: ra!.info.height };
}

/** The colour of one pixel of a PNG. */
async function pixelAt(png: Buffer, x: number, y: number): Promise<[number, number, number]> {
  const { data } = await sharp(png)
    .extract({ left: x, top: y, width: 1, height: 1 })
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return [data[0]!, data[1]!, data[2]!];
}

/** 'white' (the field), 'page' (the test page's #f0d890) or 'other', within a few levels. */
function nearestName([r, g, b]: [number, number, number]): 'white' | 'page' | 'other' {
  const near = (c: [number, number, number]) => Math.abs(r - c[0]) + Math.abs(g - c[1]) + Math.abs(b - c[2]) <= 24;
  return near([255, 255, 255]) ? 'white' : near([0xf0, 0xd8, 0x90]) ? 'page' : 'other';
}

/** A caret blinking or the panel clock ticking between two looks: at most this much of the screen. */
const TINY = 0.002;

describe('replay, end to end: what the agent did, where, and what the screen showed', () => {
  let ui: UiHarness;
  let client: Client;
  let remote: Browser | undefined;
  let browserPage: Page;
  let out: string;
  const sb = uniqueName('replay');
  const mark = uniqueName('REPLAY');
  const figures: Record<string, unknown> = {};
  const call = async (name: string, args: Record<string, unknown>) => {
    const r = (await client.callTool({ name, arguments: { sandbox: sb, ...args } })) as ToolResult;
    if (r.isError) throw new Error(`${name}: ${textOf(r)}`);
    return r;
  };
  /** A live screenshot through the agent's tool: the PNG and when it was taken. */
  const liveShot = async () => {
    const r = await call('screenshot', {});
    const frame = jsonOf(r) as { takenAt: string; frameId: string };
    return { png: Buffer.from(r.content.find((c) => c.type === 'image')!.data!, 'base64'), takenAt: frame.takenAt, frameId: frame.frameId };
  };
  /** A method of the API as the window calls it (the server's own dispatcher). */
  const api = async <T>(method: string, params: Record<string, unknown>): Promise<T> => {
    const r = (await ui.server.call(method, params)) as { ok?: T; error?: { message: string } };
    if (r.error) throw new Error(`${method}: ${r.error.message}`);
    return r.ok as T;
  };

  // What happened, kept for the checks on the view.
  const cdWindow = { before: 0, after: 0 };
  let beforeClick: { png: Buffer; takenAt: string; frameId: string };
  let afterTyping: { png: Buffer; takenAt: string; frameId: string };
  const clickWindow = { before: 0, after: 0 };

  beforeAll(async () => {
    ui = await openUi({ width: 1500, height: 1150 });
    out = mkdtempSync(join(tmpdir(), 'sdesk-replay-export-'));
    await ui.t.desk.createSandbox({ name: sb, backend: 'docker', image: 'sandbox-desk/desktop:latest' });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await createMcpServer(ui.t.desk).connect(serverSide);
    client = new Client({ name: 'sandbox-desk-replay-e2e', version: '1.0.0' });
    await client.connect(clientSide);
  }, 180_000);
  afterAll(async () => {
    await remote?.close().catch(() => undefined);
    await client?.close();
    await ui?.close();
    if (out) rmSync(out, { recursive: true, force: true });
    console.log(`replay-e2e figures: ${JSON.stringify(figures)}`);
  });

  it('the agent runs `cd /tmp/proj`, opens a page, clicks into it and types; a terminal prints a line', async () => {
    expect(jsonOf(await call('desktop_start', { geometry: '1024x768' }))).toMatchObject({ running: true });
    const html = [
      '<title>replay</title><body style="margin:0;background:#f0d890">',
      '<input id=q style="font:40px sans-serif;width:900px;height:300px;margin:20px;border:4px solid #36c">',
    ].join('');
    await call('execute_shell_command', {
      session: 'agent',
      command: `mkdir -p /tmp/proj && printf '%s' '${html}' > /tmp/proj/page.html && chmod -R a+rX /tmp/proj`,
    });
    cdWindow.before = Date.now();
    expect(jsonOf(await call('execute_shell_command', { session: 'agent', command: 'cd /tmp/proj' }))).toMatchObject({
      cwd: '/tmp/proj',
      cwdObserved: true,
    });
    cdWindow.after = Date.now();

    // A person's terminal in the window prints a line (its recording is the replayed terminal).
    await ui.page.goto(ui.server.appUrl());
    await ui.page.getByTestId(`sandbox-row-${sb}`).click();
    await ui.page.getByTestId('view-workspace').click();
    await ui.page.getByTestId('terminal-tab-term-1').waitFor({ timeout: 60_000 });
    await expect.poll(() => bufferOf(ui.page, 'term-1'), { timeout: 60_000 }).toMatch(/[$#] *$/m);
    await ui.page.getByTestId('terminal-term-1').click();
    await ui.page.keyboard.type(`cd /tmp/proj && echo ${mark}-$((6*7))`);
    await ui.page.keyboard.press('Enter');
    await expect.poll(() => bufferOf(ui.page, 'term-1'), { timeout: 30_000 }).toContain(`${mark}-42`);

    // The page opens in the desktop's browser (over its DevTools, as `desktop browser` gives them);
    // the agent then clicks into the field and types, by the screen alone.
    remote = await chromium.connectOverCDP((await ui.t.desk.desktop.browserEndpoint(sb)).httpUrl);
    browserPage = await remote.contexts()[0]!.newPage();
    await browserPage.goto('file:///tmp/proj/page.html');
    await browserPage.bringToFront();
    await call('wait_until_stable', { quietMs: 1000, timeoutMs: 30_000 });
    // An agent looks before it clicks: under CI load Chromium paints the page a while after DevTools
    // says it loaded. Wait until the screen shows it — the white field under the click point, the
    // page's own colour right of the field — so the click lands on the page and not on what was there.
    await expect
      .poll(
        async () => {
          const shot = await liveShot();
          return (await Promise.all([pixelAt(shot.png, 400, 300), pixelAt(shot.png, 985, 300)])).map(nearestName);
        },
        { timeout: 30_000, interval: 500 },
      )
      .toEqual(['white', 'page']);
    // The click names the screenshot it aimed on (its frameId): the replay shows that frame for it. A
    // frame the screen moved on from is refused (stale_frame): then a fresh look, once more.
    for (let attempt = 0; ; attempt++) {
      beforeClick = await liveShot();
      clickWindow.before = Date.now();
      const r = (await client.callTool({
        name: 'click',
        arguments: { sandbox: sb, x: 400, y: 300, frameId: beforeClick.frameId },
      })) as ToolResult;
      clickWindow.after = Date.now();
      if (!r.isError) break;
      if (attempt > 2 || !textOf(r).includes('stale_frame')) throw new Error(`click: ${textOf(r)}`);
    }
    // The page itself says the click focused its field (a loaded browser handles the click a while
    // after Xvnc has: wait for it, bounded) …
    await expect.poll(() => browserPage.evaluate(() => document.activeElement?.id ?? ''), { timeout: 15_000 }).toBe('q');
    await call('type', { text: 'hello replay' });
    // … and that the text went into it (the same: the keys reach the page after Xvnc has them).
    await expect.poll(() => browserPage.$eval('#q', (e) => (e as HTMLInputElement).value), { timeout: 15_000 }).toBe('hello replay');
    // The caret blinks in the focused field: "stable" may never come, so this only waits a little.
    await call('wait_until_stable', { quietMs: 800, timeoutMs: 4000 });
    afterTyping = await liveShot();
    // The typed text made it onto the screen (the live screenshots differ by more than a caret).
    expect((await pixelDifference(beforeClick.png, afterTyping.png)).fraction).toBeGreaterThan(TINY);
  });

  let events: ReplayEvent[] = [];
  let startedAt = 0;
  it('the recorded screen at a moment is the screen the agent saw then (replayFrame vs the live screenshot)', async () => {
    const answer = await api<{ startedAt: string | null; events: ReplayEvent[] }>('replayEvents', { sandbox: sb });
    events = answer.events;
    startedAt = Date.parse(answer.startedAt!);
    figures.events = events.length;
    // The recorder writes asynchronously: wait until the recording reaches the last live look.
    const screenEnd = async () => {
      const { recordings } = await api<{ recordings: Array<{ sandbox: string; screen: { endedAt: string } | null }> }>('replayList', {
        sandbox: sb,
      });
      return Date.parse(recordings.find((r) => r.sandbox === sb)?.screen?.endedAt ?? '1970-01-01T00:00:00Z');
    };
    await expect.poll(screenEnd, { timeout: 60_000, interval: 500 }).toBeGreaterThanOrEqual(Date.parse(afterTyping.takenAt));
    for (const [name, shot] of [
      ['beforeClick', beforeClick],
      ['afterTyping', afterTyping],
    ] as const) {
      const frame = await api<ReplayFrame>('replayFrame', { sandbox: sb, at: shot.takenAt, format: 'png' });
      const d = await pixelDifference(shot.png, Buffer.from(frame.data, 'base64'));
      figures[`frameDiff.${name}`] = d.fraction;
      expect(d).toMatchObject({ width: 1024, height: 768 });
      expect(d.fraction).toBeLessThanOrEqual(TINY);
    }
  });

  it('the Replay view lists each call at its time with cwd /tmp/proj, shows the screen then and the terminal line', async () => {
    const p = ui.page;
    await p.getByTestId('view-replay').click();
    await p.getByTestId('replay-view').waitFor({ timeout: 30_000 });
    // The cd: in the list, at its time, with the cwd it ended in.
    const cd = events.findIndex((e) => e.kind === 'agentCall' && /cd \/tmp\/proj$/.test(e.summary));
    expect(cd).toBeGreaterThanOrEqual(0);
    const cdAt = Date.parse(events[cd]!.at);
    expect(cdAt).toBeGreaterThanOrEqual(cdWindow.before - 5);
    expect(cdAt).toBeLessThanOrEqual(cdWindow.after + 5);
    expect(events[cd]!.cwdObserved).toBe('/tmp/proj');
    const rows = p.getByTestId('replay-event');
    await expect.poll(() => rows.count(), { timeout: 30_000 }).toBeGreaterThanOrEqual(events.length);
    const cdRow = rows.nth(cd);
    expect(await cdRow.getByTestId('replay-event-summary').textContent()).toMatch(/cd \/tmp\/proj$/);
    expect(await cdRow.getByTestId('replay-event-cwd').textContent()).toMatch(/\/tmp\/proj$/);
    const offset = cdAt - startedAt;
    const shown = await cdRow.getByTestId('replay-event-time').textContent();
    expect(shown).toBe(
      `${Math.floor(offset / 60_000)}:${String(Math.floor(offset / 1000) % 60).padStart(2, '0')}.${Math.floor(offset / 100) % 10}`,
    );

    // Jump to the cd: the terminal has not printed the line yet.
    await cdRow.getByRole('button').click();
    await expect.poll(() => bufferOf(p, 'replay'), { timeout: 20_000 }).not.toContain(`${mark}-42`);

    // Jump to the click: the screen the agent clicked on (the live screenshot before it), the point
    // drawn, and the terminal line printed by then.
    const click = events.findIndex((e) => e.kind === 'action' && /click/.test(e.summary));
    expect(click).toBeGreaterThan(cd);
    const clickAt = Date.parse(events[click]!.at);
    expect(clickAt).toBeGreaterThanOrEqual(clickWindow.before - 5);
    expect(clickAt).toBeLessThanOrEqual(clickWindow.after + 5);
    await rows.nth(click).getByRole('button').click();
    const img = p.getByTestId('replay-frame');
    const frameAt = events[click]!.frameAt ?? events[click]!.at;
    // The view has the frame of that moment once its image is the update the core renders for it.
    const expected = await api<ReplayFrame>('replayFrame', { sandbox: sb, at: frameAt, format: 'png' });
    await expect.poll(() => img.getAttribute('data-at'), { timeout: 30_000 }).toBe(expected.at);
    await p.getByTestId('replay-point').waitFor({ timeout: 10_000 });
    const src = (await img.getAttribute('src'))!;
    const viewPng = Buffer.from(src.slice(src.indexOf(',') + 1), 'base64');
    const d = await pixelDifference(beforeClick.png, viewPng);
    figures['viewDiff.click'] = d.fraction;
    expect(d.fraction).toBeLessThanOrEqual(TINY);
    await expect.poll(() => bufferOf(p, 'replay'), { timeout: 20_000 }).toContain(`${mark}-42`);
    await p.emulateMedia({ colorScheme: 'dark' });
    // The clicked row took the focus (and the page scrolled to it): the top of the view for the picture.
    await p.getByTestId('replay-view').evaluate((el) => {
      for (let e: Element | null = el; e; e = e.parentElement) e.scrollTop = 0;
    });
    await p.screenshot({ path: join(DOCS, 'replay-view.png') });
    // Accessible with real content, in both schemes (the window's axe standard: no serious finding).
    for (const colorScheme of ['dark', 'light'] as const) {
      await p.emulateMedia({ colorScheme });
      expect(await seriousViolations(p)).toEqual([]);
    }
    await p.emulateMedia({ colorScheme: 'dark' });
  });

  it('at 1280×720 and 1440×900 the scrubber, the frame and the first event are in view at once, without scrolling (issue 36)', async () => {
    const p = ui.page;
    const started = Date.now();
    for (const [width, height] of [
      [1280, 720],
      [1440, 900],
    ] as const) {
      await p.setViewportSize({ width, height });
      // The event list scrolls in its own pane: at its top, its first row is the one to see.
      await p.locator('.replay-event-list').evaluate((el) => (el.scrollTop = 0));
      await p.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      const seen = await p.evaluate(() => {
        const box = (sel: string) => {
          const r = document.querySelector(sel)!.getBoundingClientRect();
          return { top: r.top, bottom: r.bottom, left: r.left, right: r.right, width: r.width, height: r.height };
        };
        const view = document.querySelector<HTMLElement>('[data-testid="replay-view"]')!;
        let scrolled = 0;
        for (let e: Element | null = view; e; e = e.parentElement) scrolled += e.scrollTop;
        const time = document.querySelector<HTMLElement>('[data-testid="replay-time"]')!;
        return {
          viewport: { width: innerWidth, height: innerHeight },
          scrolled: scrolled + (document.scrollingElement?.scrollTop ?? 0),
          // Nothing in the view below its bottom edge: the page needs no scrolling.
          viewOverflow: view.scrollHeight - view.clientHeight,
          timeClipped: time.scrollWidth > time.clientWidth,
          time: time.textContent,
          scrubber: box('[data-testid="replay-scrubber"]'),
          frame: box('[data-testid="replay-frame"]'),
          firstEvent: box('[data-testid="replay-event"]'),
        };
      });
      await p.screenshot({ path: join(DOCS, `replay-${width}x${height}.png`) });
      figures[`layout.${width}x${height}`] = { frame: [Math.round(seen.frame.width), Math.round(seen.frame.height)], time: seen.time };
      expect(seen.scrolled).toBe(0);
      expect(seen.viewOverflow).toBeLessThanOrEqual(0);
      expect(seen.timeClipped).toBe(false);
      expect(seen.time).toMatch(/^(\d+:)?\d+:\d\d\.\d \/ (\d+:)?\d+:\d\d\.\d$/);
      for (const part of ['scrubber', 'frame', 'firstEvent'] as const) {
        const r = seen[part];
        expect({
          part,
          inView: r.top >= 0 && r.left >= 0 && r.bottom <= height && r.right <= width && r.width > 0 && r.height > 0,
        }).toEqual({
          part,
          inView: true,
        });
      }
      // The frame scales to the space left, and that is a usable picture (the 1024×768 screen at half size or more).
      expect(seen.frame.width).toBeGreaterThanOrEqual(400);
    }
    figures.layoutWallMs = Date.now() - started;

    // 16× from the start: the screen shows the recorded updates between keyframes as it plays (the
    // frames' own times, data-at, change more often than there are keyframes).
    const { recordings } = await api<{ recordings: Array<{ sandbox: string; screen: { keyframes: number } | null }> }>('replayList', {
      sandbox: sb,
    });
    const keyframes = recordings.find((r) => r.sandbox === sb)!.screen!.keyframes;
    await p.getByTestId('replay-speed-16').click();
    // The speed button has the focus (inside the view): Home goes to the view's keys.
    await p.keyboard.press('Home');
    const img = p.getByTestId('replay-frame');
    const shown = new Set<string>();
    await p.getByTestId('replay-play').click();
    const until = Date.now() + 4000;
    while (Date.now() < until && (await p.getByTestId('replay-play').textContent()) === 'Pause') {
      shown.add((await img.getAttribute('data-at')) ?? '');
      await p.waitForTimeout(40);
    }
    figures.play16 = { framesShown: shown.size, keyframes };
    expect(shown.size).toBeGreaterThan(keyframes);
    await p.setViewportSize({ width: 1500, height: 1150 });
  });

  it('Export from the view: a video ffprobe reads and .cast files that are asciicast v2', async () => {
    const p = ui.page;
    const started = Date.now();
    await p.getByTestId('replay-export-out').fill(out);
    await p.getByTestId('replay-export').click();
    await p.getByTestId('replay-export-result').waitFor({ timeout: 300_000 });
    figures.exportWallMs = Date.now() - started;
    const video = (await p.getByTestId('replay-export-video').textContent())!.split(' (')[0]!;
    const probe = JSON.parse(
      execFileSync('ffprobe', ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', video], { encoding: 'utf8' }),
    ) as { format: { duration: string }; streams: Array<{ codec_type: string; width?: number; height?: number }> };
    const stream = probe.streams.find((s) => s.codec_type === 'video')!;
    figures.video = { file: video, durationS: Number(probe.format.duration), width: stream.width, height: stream.height };
    expect(Number(probe.format.duration)).toBeGreaterThan(0);
    expect([stream.width, stream.height]).toEqual([1024, 768]);

    const casts = await p.getByTestId('replay-export-cast').allTextContents();
    expect(casts.length).toBeGreaterThanOrEqual(1);
    let sawMark = false;
    for (const file of casts) {
      const [head, ...lines] = readFileSync(file, 'utf8').trimEnd().split('\n');
      expect(JSON.parse(head!)).toMatchObject({ version: 2, width: expect.any(Number), height: expect.any(Number) });
      for (const line of lines) {
        const e = JSON.parse(line) as unknown[];
        expect(e).toEqual([expect.any(Number), expect.stringMatching(/^[oirm]$/), expect.any(String)]);
        if (e[1] === 'o' && String(e[2]).includes(`${mark}-42`)) sawMark = true;
      }
    }
    expect(sawMark).toBe(true);
    figures.casts = casts.length;
  });
});
