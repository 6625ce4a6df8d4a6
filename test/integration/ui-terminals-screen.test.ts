/**
 * End to end in the browser (issue 13 items 2 and 3): a terminal survives selecting another sandbox
 * and coming back (same shell: same PID, its variable still set, its scrollback replayed from the
 * core), a second window attaches to the same shell, closing the tab ends the shell inside the
 * container; the desktop is resized to its pane (1:1, readable) and pops out into a tab of its own.
 * Real core, Docker, xterm.js, noVNC and Xvnc. Screenshots: terminal-reattach.png, screen-fit-modes.png and workspace.png
 * (in docs/ with SDESK_UPDATE_DOCS=1, else test/artifacts/).
 */
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '../../src/api/local-server.js';
import { uniqueName, type TestDesk } from './helpers.js';
import { ARTIFACTS, openUi, type UiHarness } from './ui-harness.js';
import { bufferOf } from './ui-terminal-text.js';

const ROOT = resolve(import.meta.dirname, '../..');
// The pictures land in test/artifacts/; with SDESK_UPDATE_DOCS=1 in docs/ (the README's), so a plain run leaves the tree clean.
const DOCS = process.env.SDESK_UPDATE_DOCS === '1' ? join(ROOT, 'docs') : ARTIFACTS;

/** Distinct colours on the screen's canvas: more than a cursor on black once Xfce has painted. */
const paintedColours = (page: Page) =>
  page.evaluate(() => {
    const c = document.querySelector<HTMLCanvasElement>('[data-testid="vnc-screen"] canvas');
    if (!c || !c.width) return 0;
    const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
    const seen = new Set<number>();
    for (let i = 0; i < d.length; i += 4 * 97) seen.add((d[i]! << 16) | (d[i + 1]! << 8) | d[i + 2]!);
    return seen.size;
  });

describe('terminals that survive a click elsewhere, and the screen at a readable size (browser)', () => {
  let ui: UiHarness;
  let t: TestDesk;
  let server: LocalServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const mark = uniqueName('mark');
  const a = uniqueName('uits-a');
  const b = uniqueName('uits-b');
  let containerA = '';

  beforeAll(async () => {
    // The newcomer's window: 1440x900.
    ui = await openUi({ width: 1440, height: 900 });
    ({ t, server, browser, context, page } = ui);
    // Made through the core: creating through the window is ui-e2e's; here the window only uses them.
    const created = await t.desk.createSandbox({ name: a, backend: 'docker', image: 'sandbox-desk/desktop:latest' });
    containerA = created.sandbox.backendRef!;
    await t.desk.createSandbox({ name: b, backend: 'docker', image: 'sandbox-desk/base:latest' });
  }, 120_000);
  afterAll(async () => {
    await ui?.close();
  });

  /** Two screenshots side by side with captions, laid out and shot by the same browser. */
  const figure = async (shots: Array<[Buffer, string]>, path: string) => {
    const fig = await browser.newPage({ viewport: { width: 1480, height: 900 } });
    try {
      const cells = shots
        .map(
          ([png, caption]) =>
            `<figure><img src="data:image/png;base64,${png.toString('base64')}"><figcaption>${caption}</figcaption></figure>`,
        )
        .join('');
      await fig.setContent(
        `<body style="margin:0;background:#15171c;color:#d7dae0;font:14px sans-serif;display:flex;gap:16px;padding:16px;width:max-content">${cells}</body>`,
      );
      await fig.locator('body').screenshot({ path });
    } finally {
      await fig.close();
    }
  };

  const select = async (p: Page, name: string) => {
    await p.getByTestId(`sandbox-row-${name}`).click();
    await expect.poll(() => p.locator('.toolbar-name').textContent(), { timeout: 10_000 }).toBe(name);
  };
  const workspace = async (p: Page) => {
    await p.getByTestId('view-workspace').click();
    await p.getByTestId('terminal-tab-term-1').waitFor({ timeout: 30_000 });
  };

  let pid = '';
  it('a shell survives selecting another sandbox and coming back: same PID, variable set, scrollback there', async () => {
    await page.goto(server.appUrl());
    await select(page, a);
    await workspace(page);
    await expect.poll(() => bufferOf(page, 'term-1'), { timeout: 30_000 }).toMatch(/[$#] *$/m);
    await page.getByTestId('terminal-term-1').click();
    await page.keyboard.type(`export X=${mark}; echo "pid=$$"`);
    await page.keyboard.press('Enter');
    await expect.poll(() => bufferOf(page, 'term-1'), { timeout: 20_000 }).toMatch(/^pid=\d+$/m);
    pid = /^pid=(\d+)$/m.exec(await bufferOf(page, 'term-1'))![1]!;

    // Elsewhere: the other sandbox's workspace (its own terminal), then back.
    await select(page, b);
    await page.getByTestId('terminal-tab-term-1').waitFor({ timeout: 30_000 });
    await expect.poll(() => bufferOf(page, 'term-1'), { timeout: 30_000 }).toMatch(/[$#] *$/m);
    expect(await bufferOf(page, 'term-1')).not.toContain(`pid=${pid}`);
    await select(page, a);
    // The scrollback, replayed by the core: the earlier output is there before anything is typed.
    await expect.poll(() => bufferOf(page, 'term-1'), { timeout: 20_000 }).toMatch(new RegExp(`^pid=${pid}$`, 'm'));
    await page.getByTestId('terminal-term-1').click();
    await page.keyboard.type('echo "again=$$ $X"');
    await page.keyboard.press('Enter');
    await expect.poll(() => bufferOf(page, 'term-1'), { timeout: 20_000 }).toContain(`again=${pid} ${mark}`);
    // One shell in the core for a's tab, not one per visit.
    expect(t.desk.io.listTerminals(a).map((x) => x.session)).toEqual(['term-1']);
    await page.screenshot({ path: join(DOCS, 'terminal-reattach.png') });
  });

  it('a second window attaches to the same shell: both see the output, either may type', async () => {
    const second = await context.newPage();
    try {
      await second.goto(`${server.origin}/`);
      await select(second, a);
      await workspace(second);
      await expect.poll(() => bufferOf(second, 'term-1'), { timeout: 20_000 }).toContain(`again=${pid} ${mark}`);
      await second.getByTestId('terminal-term-1').click();
      await second.keyboard.type('echo "second-$((2*3)) $$"');
      await second.keyboard.press('Enter');
      await expect.poll(() => bufferOf(page, 'term-1'), { timeout: 20_000 }).toContain(`second-6 ${pid}`);
      expect(t.desk.io.listTerminals(a)[0]!.viewers).toBe(2);
    } finally {
      await second.close();
    }
    await expect.poll(() => t.desk.io.listTerminals(a)[0]?.viewers, { timeout: 10_000 }).toBe(1);
  });

  it('the desktop is resized to its pane (1:1, readable) once in control, and pops out into a tab of its own', async () => {
    await page.getByTestId('desktop-start').click();
    await page.waitForFunction(
      () => (window as unknown as { __sdeskScreenConnected?: boolean }).__sdeskScreenConnected === true,
      undefined,
      {
        timeout: 90_000,
      },
    );
    expect(await page.getByTestId('screen-mode-resize').getAttribute('aria-checked')).toBe('true');
    // View only, the desktop is fitted into the pane (1280x800 in ~700 px: small, with black bars).
    await expect.poll(() => paintedColours(page), { timeout: 30_000 }).toBeGreaterThan(6);
    await page.waitForTimeout(1000);
    const before = await page.getByTestId('screen-pane').screenshot();
    await page.getByTestId('take-control').click();
    await expect.poll(() => page.getByTestId('take-control').textContent(), { timeout: 10_000 }).toMatch(/Give back/);
    // The pane's size as noVNC asks for it: its screen box, whole pixels.
    const pane = await page.getByTestId('vnc-screen').evaluate((el) => {
      const r = (el.firstElementChild ?? el).getBoundingClientRect();
      return { w: Math.floor(r.width), h: Math.floor(r.height) };
    });
    expect(pane.w).toBeGreaterThan(300);
    // The remote desktop, as the core measures it inside the sandbox, takes the pane's size.
    await expect.poll(async () => (await t.desk.desktop.status(a)).geometry, { timeout: 20_000 }).toBe(`${pane.w}x${pane.h}`);
    // 1:1: the canvas has the desktop's pixels and is drawn at that size (no scaling, no bars).
    await expect
      .poll(
        () =>
          page.evaluate(() => {
            const c = document.querySelector<HTMLCanvasElement>('[data-testid="vnc-screen"] canvas')!;
            const r = c.getBoundingClientRect();
            return `${c.width}x${c.height} drawn ${Math.floor(r.width)}x${Math.floor(r.height)}`;
          }),
        { timeout: 15_000 },
      )
      .toBe(`${pane.w}x${pane.h} drawn ${pane.w}x${pane.h}`);
    await expect.poll(() => page.getByTestId('screen-body').getAttribute('class'), { timeout: 5_000 }).toMatch(/has-control/);
    // The pane's own status line catches up (it polls the desktop's status).
    await expect
      .poll(() => page.getByTestId('screen-pane').locator('.pane-head').textContent(), { timeout: 15_000 })
      .toContain(`${pane.w}x${pane.h}`);
    await page.waitForTimeout(1000);
    const after = await page.getByTestId('screen-pane').screenshot();
    await page.screenshot({ path: join(DOCS, 'workspace.png') });
    await figure(
      [
        [before, 'View only: fitted — 1280×800 scaled into the pane'],
        [after, `Resize to pane, in control: the desktop is ${pane.w}×${pane.h}, 1:1 (green frame: you have control)`],
      ],
      join(DOCS, 'screen-fit-modes.png'),
    );

    const [popup] = await Promise.all([context.waitForEvent('page'), page.getByTestId('screen-popout').click()]);
    try {
      await popup.waitForLoadState();
      expect(new URL(popup.url()).searchParams.get('screen')).toBe(a);
      expect(popup.url()).not.toMatch(/ticket|token/);
      await popup.getByTestId('screen-only').waitFor({ timeout: 15_000 });
      await popup.waitForFunction(
        () => (window as unknown as { __sdeskScreenConnected?: boolean }).__sdeskScreenConnected === true,
        undefined,
        {
          timeout: 30_000,
        },
      );
      await popup.screenshot({ path: join(ARTIFACTS, 'screen-popout.png') });
    } finally {
      await popup.close();
    }
    // The window it came from still holds control.
    expect(t.desk.desktop.lease(a).holder).toBe('human');
  });
  it('closing the tab ends the shell: its process is gone from the container', async () => {
    const alive = () => {
      try {
        execFileSync('docker', ['exec', containerA, 'kill', '-0', pid], { stdio: 'ignore' });
        return true;
      } catch {
        return false;
      }
    };
    expect(alive()).toBe(true);
    await page.getByTestId('terminal-close-term-1').click();
    await expect.poll(alive, { timeout: 15_000 }).toBe(false);
    await expect.poll(() => t.desk.io.listTerminals(a), { timeout: 10_000 }).toEqual([]);
  });
});
