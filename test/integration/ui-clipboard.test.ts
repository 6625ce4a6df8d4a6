/**
 * End to end in the browser (issue 14 item 3): the person's clipboard (Chromium's Clipboard API)
 * reaches the sandbox desktop's X clipboard through noVNC's cut text once they hold control, and text
 * copied inside the sandbox (xclip) lands on the person's clipboard. Real core, Docker, Xvnc, noVNC.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '../../src/api/local-server.js';
import { writeClipboard } from '../../src/desktop/desktop-clipboard.js';
import { desktopLayout } from '../../src/desktop/desktop-runtime.js';
import { uniqueName, type TestDesk } from './helpers.js';
import { openUi, type UiHarness } from './ui-harness.js';

describe('clipboard both ways in the window (browser, real desktop sandbox)', () => {
  let ui: UiHarness;
  let t: TestDesk;
  let server: LocalServer;
  let page: Page;
  const sb = uniqueName('uiclip');
  const mark = uniqueName('clip-text');

  beforeAll(async () => {
    ui = await openUi({ width: 1440, height: 900 });
    ({ t, server, page } = ui);
    await ui.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.origin });
    await t.desk.createSandbox({ name: sb, backend: 'docker', image: 'sandbox-desk/desktop:latest' });
    await t.desk.desktop.start(sb, { geometry: '1024x768' });
  }, 240_000);
  afterAll(async () => {
    await ui?.close();
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
