/**
 * The window at 1280×720 and 1440×900 (issue 36): the main views visited and saved into docs/
 * (docs/ui-<size>-<view>.png); the status bar is not cut (nothing in it overflows the window) and a long
 * sandbox name in the list does not wrap mid-word (one line, ellipsis, the full name as its title).
 * Then the walk a person makes while an agent works, on one Docker desktop sandbox the file shares:
 * take control of the desktop → give it back (the pill says who holds it; the agent's screen keeps its
 * geometry) → restore a checkpoint (the desktop comes back running) → export the replay across the
 * restore (a video ffprobe reads, the restart's gap a card in it, however quick the restart). Each step's view is
 * checked and saved at both sizes by resizing the page; the restore and the export, tens of seconds
 * each, are made once. The walk's screenshots go to docs/ with SDESK_UPDATE_DOCS=1
 * (docs/ui-<size>-walk-*.png), else to test/artifacts/.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CARD_BACKGROUND } from '../../src/desktop/replay/gap-card.js';
import { CARD_MIN_MS, screenGaps, screenRecordTimes } from '../../src/desktop/replay/index.js';
import { uniqueName } from './helpers.js';
import { ARTIFACTS, openUi, type UiHarness } from './ui-harness.js';

const DOCS = join(resolve(import.meta.dirname, '../..'), 'docs');
const WALK_SHOTS = process.env.SDESK_UPDATE_DOCS === '1' ? DOCS : ARTIFACTS;

// One core, one window and one desktop sandbox for the whole file: each size only resizes the page.
let ui: UiHarness;
const name = `${uniqueName('walk')}-a-rather-long-sandbox-name`;
const desk = uniqueName('walkdesk');
let checkpoint = '';
let out = '';

beforeAll(async () => {
  mkdirSync(DOCS, { recursive: true });
  out = mkdtempSync(join(tmpdir(), 'sdesk-walk-export-'));
  ui = await openUi({ width: 1280, height: 720 }, { desk: { plugins: false } });
  await ui.t.desk.createSandbox({ name, backend: 'local', defaultCwd: '/tmp' });
  await ui.t.desk.createSandbox({ name: desk, backend: 'docker', image: 'sandbox-desk/desktop:latest' });
  // Disk only (the desktop's processes are not in it): what a restore brings back is the restart's doing.
  checkpoint = (await ui.t.desk.checkpoints.checkpoint({ sandbox: desk })).checkpoint.id;
  await ui.t.desk.desktop.start(desk, { geometry: '1280x800' });
}, 180_000);
afterAll(async () => {
  for (const id of ui?.t.desk.store.checkpoints.ids() ?? []) await ui.t.desk.checkpoints.remove(id).catch(() => undefined);
  await ui?.close();
  if (out) rmSync(out, { recursive: true, force: true });
});

describe.each([
  { width: 1280, height: 720 },
  { width: 1440, height: 900 },
])('the window at $width×$height', (size) => {
  const tag = `${size.width}x${size.height}`;

  beforeAll(async () => {
    await ui.page.setViewportSize(size);
    await ui.page.goto(ui.server.appUrl());
    await ui.page.getByTestId(`sandbox-row-${name}`).waitFor();
  }, 60_000);

  it('status bar not cut, the long name on one line; the main views saved', async () => {
    const { page } = ui;
    await page.getByTestId(`sandbox-row-${name}`).click();
    for (const view of ['details', 'workspace', 'logs'] as const) {
      await page.getByTestId(`view-${view}`).click();
      await page.waitForTimeout(300); // the view's first paint (lazy chunks), for the screenshot only
      await page.screenshot({ path: join(DOCS, `ui-${tag}-${view}.png`) });
    }
    // Every item of the status bar lies inside the window: none pushed past its right edge or clipped.
    const bar = await page.locator('footer.statusbar').evaluate((el) => {
      const r = el.getBoundingClientRect();
      const items = Array.from(el.children).map((c) => ({
        right: c.getBoundingClientRect().right,
        cut: c.scrollWidth > c.clientWidth + 1,
      }));
      return { right: r.right, scroll: el.scrollWidth, client: el.clientWidth, items };
    });
    expect(bar.scroll).toBeLessThanOrEqual(bar.client + 1);
    for (const i of bar.items) expect(i.right).toBeLessThanOrEqual(bar.right + 1);
    await expect(page.getByTestId('tasks-toggle').isVisible()).resolves.toBe(true);
    await expect(page.getByTestId('open-images').isVisible()).resolves.toBe(true);
    // The name: one line (its height is one line's), never broken inside a word.
    const nameBox = await page
      .getByTestId(`sandbox-row-${name}`)
      .locator('.sandbox-name')
      .evaluate((el) => ({
        height: el.getBoundingClientRect().height,
        line: parseFloat(getComputedStyle(el).lineHeight) || 20,
        white: getComputedStyle(el).whiteSpace,
      }));
    expect(nameBox.white).toBe('nowrap');
    expect(nameBox.height).toBeLessThan(nameBox.line * 1.5);
  }, 40_000);
});

// One walk across both sizes (each step's view is checked and saved at 1280×720 and at 1440×900, by
// resizing the page): a restore and an export cost tens of seconds each, so each is made once.
describe('take control → give back → restore a checkpoint → export the replay, at both sizes', () => {
  const sizes = [
    { width: 1280, height: 720 },
    { width: 1440, height: 900 },
  ] as const;
  /** Each size in turn: the page resized, then `check` (what the person sees there) and a screenshot. */
  const atBothSizes = async (step: string, check: () => Promise<void>) => {
    for (const size of sizes) {
      await ui.page.setViewportSize(size);
      await check();
      await ui.page.screenshot({ path: join(WALK_SHOTS, `ui-${size.width}x${size.height}-walk-${step}.png`) });
    }
  };
  /** The element lies inside the window as it is now (seen without scrolling the page). */
  const inView = async (testId: string) => {
    const box = await ui.page.getByTestId(testId).boundingBox();
    const vp = ui.page.viewportSize()!;
    return box !== null && box.y >= 0 && box.y + Math.min(box.height, 40) <= vp.height && box.x + box.width <= vp.width + 1;
  };

  it('the lease pill, the restore result and the export as the person sees them', async () => {
    const { page, t } = ui;
    const pill = page.getByTestId('lease-indicator');
    const button = page.getByTestId('take-control');
    await page.setViewportSize(sizes[0]);
    await page.goto(ui.server.appUrl());
    await page.getByTestId(`sandbox-row-${desk}`).click();
    await page.getByTestId('view-workspace').click();
    await button.waitFor({ timeout: 30_000 });
    const geometry = (await t.desk.desktop.status(desk)).geometry;
    expect(geometry).toBe('1280x800');

    // Take control and give it back, at each size: the pill says who holds it, the core's lease agrees.
    for (const size of sizes) {
      await page.setViewportSize(size);
      await button.click();
      await expect.poll(() => pill.textContent(), { timeout: 10_000 }).toBe('You have control');
      expect(await button.textContent()).toBe('Give back');
      expect(t.desk.desktop.lease(desk).holder).toBe('human');
      expect(await inView('lease-indicator')).toBe(true);
      await page.screenshot({ path: join(WALK_SHOTS, `ui-${size.width}x${size.height}-walk-control.png`) });
      await button.click();
      await expect.poll(() => button.textContent(), { timeout: 10_000 }).toBe('Take control');
      // Nobody or the agent (named by its session once one has acted): not the person any more.
      expect(await pill.textContent()).toMatch(/^(Nobody|Agent\b.*) has control · view only$/);
      expect(t.desk.desktop.lease(desk).holder).toBe('agent');
    }
    // The agent's next screenshot has the geometry it had before the person took control.
    const shot = await t.desk.desktop.screenshot(desk);
    expect(`${shot.frame.width}x${shot.frame.height}`).toBe(geometry);

    // Restore, from the checkpoints panel with its confirmation. The desktop was running: it runs again.
    await page.getByTestId('view-details').click();
    await page.getByTestId(`checkpoint-restore-${checkpoint}`).click();
    await page.getByRole('alertdialog', { name: `Restore ${desk}` }).waitFor();
    const from = Date.now() - 1000;
    await page.getByTestId('confirm-restore').click();
    const result = page.getByTestId('checkpoint-result');
    await expect.poll(() => result.textContent(), { timeout: 90_000 }).toMatch(/^Restored /);
    // What ran before came back (a not_restarted warning would be listed in the result).
    expect(await result.textContent()).toMatch(new RegExp(`^Restored ${desk}; \\d+ sessions? re-measured\\.$`));
    expect((await t.desk.desktop.status(desk)).running).toBe(true);
    // The restart is a gap in the screen recording however quick it was (the recorder marks the segment
    // that resumes): wait until the recording resumed after it, so the range below holds both sides.
    const screenDir = t.desk.desktop.screenRecordingDir(desk)!;
    const resumed = () => {
      const gap = screenGaps(screenDir, from, Infinity)[0];
      return gap !== undefined && (screenRecordTimes(screenDir).at(-1)?.at(-1) ?? 0) > gap.to + 500;
    };
    await expect.poll(resumed, { timeout: 30_000, interval: 200 }).toBe(true);
    const to = Date.now();
    await atBothSizes('restored', async () => {
      await result.scrollIntoViewIfNeeded();
      expect(await inView('checkpoint-result')).toBe(true);
    });

    // Export from the Replay view, across the restore only (a short video: the encoding is most of the
    // cost): what was not recorded while the desktop restarted is listed, each one a card in the video.
    const dir = join(out, 'walk');
    await page.getByTestId('view-replay').click();
    await page.getByTestId('replay-export-out').fill(dir);
    await page.getByTestId('replay-export-from').fill(new Date(from).toISOString());
    await page.getByTestId('replay-export-to').fill(new Date(to).toISOString());
    await page.getByTestId('replay-export').click();
    await page.getByTestId('replay-export-result').waitFor({ timeout: 120_000 });
    const video = (await page.getByTestId('replay-export-video').textContent())!.split(' (')[0]!;
    expect(video.startsWith(dir)).toBe(true);
    const probe = JSON.parse(
      execFileSync('ffprobe', ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', video], { encoding: 'utf8' }),
    ) as { format: { duration: string }; streams: Array<{ codec_type: string }> };
    expect(probe.streams.some((s) => s.codec_type === 'video')).toBe(true);
    expect(Number(probe.format.duration)).toBeGreaterThan(0);
    // The restart left a gap however quick it was: the window lists exactly the gaps the recording has in
    // the range, each as the restore (or the desktop's restart).
    const recorded = screenGaps(screenDir, from, to);
    expect(recorded.length).toBeGreaterThanOrEqual(1);
    const listed = await page.getByTestId('replay-export-gap').allTextContents();
    expect(listed).toHaveLength(recorded.length);
    for (const g of listed)
      expect(g).toMatch(
        /^not recorded \S+ – \S+ \((sandbox restored from a checkpoint|desktop not running).*\): shown as a card in the video$/,
      );
    // And the video shows it: the first card starts with the first frame (10 a second) after the gap's
    // start and is held at least CARD_MIN_MS; 1 s into it, the frame is the card's dark background, at
    // a corner and at the middle of the left edge (the desktop has its panel and Chromium's page there).
    const cardAt = (Math.floor((recorded[0]!.from - from) / 100) + 1) / 10 + CARD_MIN_MS / 2000;
    expect(Number(probe.format.duration)).toBeGreaterThan(cardAt);
    const frame = execFileSync(
      'ffmpeg',
      ['-v', 'error', '-ss', cardAt.toFixed(2), '-i', video, '-frames:v', '1', '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-'],
      { maxBuffer: 16 << 20 },
    );
    expect(frame.length).toBe(1280 * 800 * 3);
    const isCard = (x: number, y: number) => CARD_BACKGROUND.every((c, k) => Math.abs(frame[(y * 1280 + x) * 3 + k]! - c) <= 10);
    expect([isCard(0, 0), isCard(8, 400), isCard(1279, 799)]).toEqual([true, true, true]);
    await atBothSizes('export', async () => {
      await page.getByTestId('replay-export-result').scrollIntoViewIfNeeded();
      expect(await inView('replay-export-result')).toBe(true);
    });
  }, 240_000);
});
