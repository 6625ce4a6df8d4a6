/**
 * End to end in the browser (issue 14 item 3): the person's clipboard (Chromium's Clipboard API)
 * reaches the sandbox desktop's X clipboard through noVNC's cut text once they hold control, and text
 * copied inside the sandbox (xclip) lands on the person's clipboard. Real core, Docker, Xvnc, noVNC.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalServer } from '../../src/api/local-server.js';
import { writeClipboard } from '../../src/desktop/desktop-clipboard.js';
import { desktopLayout } from '../../src/desktop/desktop-runtime.js';
import { HEADLESS_CHROMIUM, tempDesk, uniqueName, type TestDesk } from './helpers.js';

const ROOT = resolve(import.meta.dirname, '../..');

describe('clipboard both ways in the window (browser, real desktop sandbox)', () => {
  let t: TestDesk;
  let server: LocalServer;
  let browser: Browser;
  let page: Page;
  const sb = uniqueName('uiclip');
  const mark = uniqueName('clip-text');

  beforeAll(async () => {
    if (!existsSync(join(ROOT, 'dist', 'renderer', 'index.html')))
      throw new Error('the renderer is not built: run `npm run build:renderer` (setup does)');
    t = tempDesk();
    await t.desk.createSandbox({ name: sb, backend: 'docker', image: 'sandbox-desk/desktop:latest' });
    await t.desk.desktop.start(sb, { geometry: '1024x768' });
    server = new LocalServer({ desk: t.desk });
    await server.listen();
    browser = await chromium.launch(HEADLESS_CHROMIUM);
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.origin });
    page = await context.newPage();
  }, 240_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await t?.dispose();
  }, 120_000);

  it("the person's clipboard reaches the sandbox once they hold control; and what a program inside copies comes back", async () => {
    await page.goto(server.appUrl());
    await page.getByTestId(`sandbox-row-${sb}`).click();
    await page.getByTestId('view-workspace').click();
    await page.waitForFunction(() => (window as { __sdeskScreenConnected?: boolean }).__sdeskScreenConnected === true, undefined, {
      timeout: 60_000,
    });
    await page.evaluate((text) => navigator.clipboard.writeText(text), `${mark} from the window`);
    await page.getByTestId('take-control').click();
    await expect.poll(() => page.getByTestId('take-control').textContent(), { timeout: 10_000 }).toMatch(/Give back/);
    await page.getByTestId('vnc-screen').hover();
    await expect.poll(() => t.desk.desktop.clipboard(sb, 1024 * 1024), { timeout: 30_000 }).toBe(`${mark} from the window`);

    // Copied inside by a program on the desktop (xclip as the desktop's user), while the person holds
    // control: noVNC passes the sandbox's clipboard on only to a viewer that is not view-only.
    const status = await t.desk.desktop.status(sb);
    const { env } = await t.desk.sessionPlan(sb, undefined);
    const layout = desktopLayout(env, sb, Number(status.display!.replace(':', '')));
    await writeClipboard(env, layout, status.displayUser ?? undefined, `${mark} from the sandbox`, 1024 * 1024);
    await expect
      .poll(() => page.evaluate(() => (window as { __sdeskLastServerClipboard?: string }).__sdeskLastServerClipboard), { timeout: 30_000 })
      .toBe(`${mark} from the sandbox`);
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText()), { timeout: 10_000 }).toBe(`${mark} from the sandbox`);
  }, 240_000);
});
