/**
 * Accessibility and theme, end to end (issue 14 items 7 and 8): axe-core in Debian's Chromium over every
 * view of the app — empty state, create dialog, list + details, images view, workspace with terminal and
 * screen, the destructive confirmations — in the dark AND the light scheme, reports no serious or
 * critical violation; the page and the xterm.js terminal follow `prefers-color-scheme`; with
 * `prefers-reduced-motion` nothing animates; dialogs give the focus back to their opener.
 * Real core, Docker, Xvnc, noVNC. Screenshots: theme-light.png / theme-dark.png (docs/ with
 * SDESK_UPDATE_DOCS=1, else test/artifacts/).
 */
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '../../src/api/local-server.js';
import { TERMINAL_THEMES } from '../../renderer/src/app/color-scheme.js';
import { seriousViolations } from './axe.js';
import { uniqueName, type TestDesk } from './helpers.js';
import { ARTIFACTS, openUi, type UiHarness } from './ui-harness.js';

const ROOT = resolve(import.meta.dirname, '../..');
const DOCS = process.env.SDESK_UPDATE_DOCS === '1' ? join(ROOT, 'docs') : ARTIFACTS;

const bg = (page: Page) =>
  page.evaluate(() => getComputedStyle(document.body).backgroundColor || getComputedStyle(document.documentElement).backgroundColor);
const rootBg = (page: Page) => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
const xtermBackground = (page: Page, session: string) =>
  page.evaluate((s) => {
    const t = (window as unknown as { __sdeskTerminals?: Record<string, { options: { theme?: { background?: string } } }> })
      .__sdeskTerminals?.[s];
    return t?.options.theme?.background ?? null;
  }, session);

describe('accessibility and theme (browser)', () => {
  let t: TestDesk;
  let server: LocalServer;
  let ui: UiHarness | undefined;
  let page: Page;
  const name = uniqueName('a11y');
  /** Serious/critical axe findings per view and scheme; asserted empty at the end so one run shows them all. */
  const findings: Record<string, string[]> = {};

  /** axe over the page in both schemes (the page is left in the dark one). */
  async function check(view: string) {
    for (const colorScheme of ['dark', 'light'] as const) {
      await page.emulateMedia({ colorScheme });
      const v = await seriousViolations(page);
      if (v.length) findings[`${view} (${colorScheme})`] = v;
    }
    await page.emulateMedia({ colorScheme: 'dark' });
  }

  beforeAll(async () => {
    ui = await openUi({ width: 1440, height: 900 });
    ({ t, server, page } = ui);
  }, 60_000);
  afterAll(async () => {
    await ui?.close();
  }, 120_000);

  it('the empty state and the create dialog; the dialog returns the focus to its opener', async () => {
    await page.goto(server.appUrl());
    await page.getByTestId('sandbox-empty').waitFor({ timeout: 15_000 });
    await check('empty state');
    const opener = page.getByTestId('create-sandbox');
    await opener.focus();
    await opener.click();
    await page.getByTestId('create-name').waitFor();
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('create-name');
    await check('create dialog');
    for (let i = 0; i < 30; i++) await page.keyboard.press('Tab');
    expect(await page.evaluate(() => !!document.activeElement?.closest('[role="dialog"]'))).toBe(true);
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('create-sandbox');
  });

  it('list + details, and the images view', async () => {
    await t.desk.createSandbox({ name, backend: 'docker', image: 'sandbox-desk/desktop:latest' });
    await page.getByTestId(`sandbox-row-${name}`).click({ timeout: 15_000 });
    await expect.poll(() => page.getByTestId(`sandbox-state-${name}`).textContent(), { timeout: 30_000 }).toBe('running');
    await check('list + details');
    await page.getByTestId('open-images').click();
    await page.getByTestId('images-table').waitFor();
    await expect.poll(() => page.getByTestId('images-table').locator('tbody tr').count(), { timeout: 15_000 }).toBeGreaterThan(0);
    await check('images view');
    await page.keyboard.press('Escape');
    await page.getByTestId('images-view').waitFor({ state: 'detached' });
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('open-images');
  });

  it('the workspace with terminal and screen; the page and the terminal follow the colour scheme', async () => {
    await page.getByTestId('view-workspace').click();
    await page.getByTestId('terminal-tab-term-1').waitFor({ timeout: 30_000 });
    await expect.poll(() => page.locator('.terminal-overlay').count(), { timeout: 60_000 }).toBe(0);
    await page.getByTestId('desktop-start').click();
    await page.waitForFunction(
      () => (window as unknown as { __sdeskScreenConnected?: boolean }).__sdeskScreenConnected === true,
      undefined,
      {
        timeout: 120_000,
      },
    );
    await check('workspace');

    await page.emulateMedia({ colorScheme: 'light' });
    expect(await rootBg(page)).toBe('rgb(246, 247, 249)');
    await expect.poll(() => xtermBackground(page, 'term-1')).toBe(TERMINAL_THEMES.light.background);
    await page.waitForTimeout(500);
    await page.screenshot({ path: join(DOCS, 'theme-light.png') });
    await page.emulateMedia({ colorScheme: 'dark' });
    expect(await rootBg(page)).toBe('rgb(21, 23, 28)');
    await expect.poll(() => xtermBackground(page, 'term-1')).toBe(TERMINAL_THEMES.dark.background);
    await page.waitForTimeout(500);
    await page.screenshot({ path: join(DOCS, 'theme-dark.png') });
    expect(await bg(page)).not.toBe('');
  }, 180_000);

  it('the destructive confirmations take the focus on Cancel and give it back', async () => {
    await page.getByTestId('sandbox-stop').click();
    await page.getByRole('alertdialog', { name: `Stop ${name}` }).waitFor();
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('confirm-cancel');
    await check('stop confirmation');
    await page.keyboard.press('Escape');
    await page.getByRole('alertdialog').waitFor({ state: 'detached' });
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('sandbox-stop');

    await page.getByTestId('sandbox-remove').click();
    await page.getByRole('alertdialog', { name: `Remove ${name}` }).waitFor();
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('confirm-cancel');
    await check('remove confirmation');
    await page.keyboard.press('Enter');
    await page.getByRole('alertdialog').waitFor({ state: 'detached' });
    expect((await t.desk.listSandboxes()).map((s) => s.name)).toContain(name);
  });

  it('prefers-reduced-motion: spinners and pulsing dots do not animate', async () => {
    const animation = () =>
      page.evaluate(() => {
        const el = document.createElement('span');
        el.className = 'spinner';
        document.body.append(el);
        const a = getComputedStyle(el).animationName;
        el.remove();
        return a;
      });
    expect(await animation()).toBe('spin');
    await page.emulateMedia({ reducedMotion: 'reduce' });
    expect(await animation()).toBe('none');
    await page.emulateMedia({ reducedMotion: 'no-preference' });
  });

  it('axe: no serious or critical violation on any view, in either scheme', () => {
    expect(findings).toEqual({});
  });
});
