/**
 * The window at 1280×720 and 1440×900 (issue 36): the main views visited and saved into docs/
 * (docs/ui-<size>-<view>.png); the status bar is not cut (nothing in it overflows the window) and a long
 * sandbox name in the list does not wrap mid-word (one line, ellipsis, the full name as its title).
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from './helpers.js';
import { openUi, type UiHarness } from './ui-harness.js';

const DOCS = join(resolve(import.meta.dirname, '../..'), 'docs');

describe.each([
  { width: 1280, height: 720 },
  { width: 1440, height: 900 },
])('the window at $width×$height', (size) => {
  let ui: UiHarness;
  const name = `${uniqueName('walk')}-a-rather-long-sandbox-name`;

  beforeAll(async () => {
    mkdirSync(DOCS, { recursive: true });
    ui = await openUi(size, { desk: { plugins: false } });
    await ui.t.desk.createSandbox({ name, backend: 'local', defaultCwd: '/tmp' });
    await ui.page.goto(ui.server.appUrl());
    await ui.page.getByTestId(`sandbox-row-${name}`).waitFor();
  }, 60_000);
  afterAll(async () => ui?.close());

  it('status bar not cut, the long name on one line; the main views saved', async () => {
    const { page } = ui;
    await page.getByTestId(`sandbox-row-${name}`).click();
    for (const view of ['details', 'workspace', 'logs'] as const) {
      await page.getByTestId(`view-${view}`).click();
      await page.waitForTimeout(300); // the view's first paint (lazy chunks), for the screenshot only
      await page.screenshot({ path: join(DOCS, `ui-${size.width}x${size.height}-${view}.png`) });
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
