/**
 * End to end, the way a person uses it: the real renderer in headless Chromium (browser mode), the
 * real core, a real Docker engine, a real desktop. Screenshots of every step go to test/artifacts/.
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '../../src/api/local-server.js';
import { uniqueName, type TestDesk } from './helpers.js';
import { ARTIFACTS, openUi, type UiHarness } from './ui-harness.js';
import { bufferOf } from './ui-terminal-text.js';

describe('the app in a browser, end to end', () => {
  let t: TestDesk;
  let server: LocalServer;
  let ui: UiHarness | undefined;
  let page: Page;
  const name = uniqueName('ui');
  const shot = (step: string) => page.screenshot({ path: join(ARTIFACTS, `${step}.png`) });

  beforeAll(async () => {
    ui = await openUi({ width: 1500, height: 920 });
    ({ t, server, page } = ui);
  }, 60_000);
  afterAll(async () => {
    await ui?.close();
  });

  it('refuses the UI without the token', async () => {
    expect((await fetch(`${server.origin}/`)).status).toBe(401);
  });

  it('opens with the token and shows the empty state', async () => {
    await page.goto(server.appUrl());
    await expect.poll(() => page.getByTestId('create-sandbox').isVisible(), { timeout: 15_000 }).toBe(true);
    await shot('01-empty');
  });

  it('creates a docker sandbox through the UI', async () => {
    await page.getByTestId('create-sandbox').click();
    await page.getByTestId('create-name').fill(name);
    await page.getByTestId('create-backend').selectOption('docker');
    await page.getByTestId('create-image').fill('sandbox-desk/desktop:latest');
    await page.getByTestId('create-default-cwd').fill('~');
    await shot('02-create-dialog');
    await page.getByTestId('create-submit').click();
    await expect.poll(() => page.getByTestId(`sandbox-state-${name}`).textContent(), { timeout: 90_000 }).toMatch(/running/);
    await page.getByTestId(`sandbox-row-${name}`).click();
    await shot('03-created');
  });

  let session = '';
  it('types `cd /tmp && pwd` in the workspace terminal and reads /tmp back from the xterm buffer', async () => {
    await page.getByTestId('view-workspace').click();
    const tab = page.locator('[data-testid^="terminal-tab-"]').first();
    await tab.waitFor({ timeout: 30_000 });
    session = (await tab.getAttribute('data-testid'))!.slice('terminal-tab-'.length);
    const term = page.getByTestId(`terminal-${session}`);
    await term.waitFor();
    const buffer = () => bufferOf(page, session);
    await expect.poll(buffer, { timeout: 30_000 }).toMatch(/[$#] *$/m);
    await term.click();
    await page.keyboard.type('cd /tmp && pwd');
    await page.keyboard.press('Enter');
    await expect.poll(buffer, { timeout: 20_000 }).toMatch(/^\/tmp$/m);
    await shot('04-terminal');
  });

  it("the details view shows the session's cwd record moving to /tmp", async () => {
    await page.getByTestId('view-details').click();
    await expect.poll(() => page.getByTestId(`session-cwd-${session}`).textContent(), { timeout: 15_000 }).toContain('/tmp');
    expect(await page.getByTestId('details-home').textContent()).toContain('/home/agent');
    await shot('05-details');
  });

  it('starts the desktop and the screen canvas paints', async () => {
    await page.getByTestId('view-workspace').click();
    await page.getByTestId('desktop-start').click();
    await page.waitForFunction(
      () => (window as unknown as { __sdeskScreenConnected?: boolean }).__sdeskScreenConnected === true,
      undefined,
      { timeout: 60_000 },
    );
    await expect
      .poll(
        () =>
          page.evaluate(() => {
            const c = document.querySelector<HTMLCanvasElement>('[data-testid="screen-pane"] canvas');
            if (!c || !c.width) return 0;
            const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
            const seen = new Set<number>();
            for (let i = 0; i < d.length; i += 4 * 97) seen.add((d[i]! << 16) | (d[i + 1]! << 8) | d[i + 2]!);
            return seen.size;
          }),
        { timeout: 30_000 },
      )
      // More than a cursor on black: Xfce's panel and background have painted.
      .toBeGreaterThan(6);
    await page.waitForTimeout(1500);
    await shot('06-workspace');
  });

  it('takes control and clicks on the screen', async () => {
    await page.getByTestId('take-control').click();
    await expect.poll(() => page.getByTestId('take-control').textContent(), { timeout: 10_000 }).toMatch(/Give back/);
    expect(t.desk.desktop.lease(name).holder).toBe('human');
    const canvas = page.locator('[data-testid="screen-pane"] canvas').first();
    const box = (await canvas.boundingBox())!;
    await new Promise((r) => setTimeout(r, 400)); // the input gate re-reads the lease every 250 ms
    await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
    await expect.poll(async () => (await t.desk.desktop.pointer(name)).x, { timeout: 10_000 }).toBeGreaterThan(100);
    await shot('07-control');
    await page.getByTestId('take-control').click();
    await expect.poll(() => t.desk.desktop.lease(name).holder, { timeout: 10_000 }).toBe('agent');
  });

  it('stops and removes the sandbox, with a confirmation', async () => {
    await page.getByTestId('sandbox-stop').click();
    // Its terminal is open: Stop asks first, naming how many will end.
    await expect
      .poll(() => page.getByRole('alertdialog', { name: `Stop ${name}` }).textContent(), { timeout: 10_000 })
      .toMatch(/1 open terminal/);
    await page.getByTestId('confirm-stop').click();
    await expect.poll(() => page.getByTestId(`sandbox-state-${name}`).textContent(), { timeout: 60_000 }).toMatch(/stopped/);
    await page.getByTestId('sandbox-remove').click();
    await shot('08-confirm-remove');
    await page.getByTestId('confirm-remove').click();
    await expect.poll(() => page.getByTestId(`sandbox-row-${name}`).count(), { timeout: 30_000 }).toBe(0);
    expect(await t.desk.listSandboxes()).toEqual([]);
  });
});
