/**
 * The Logs tab and the resource graphs end to end: the real renderer in headless Chromium (browser
 * mode), the real core and a Docker sandbox this test made. The tab follows the container's output (a
 * line written after it opened shows up), searches it, and the list row and Details draw CPU and memory.
 * Screenshots go to docs/ (the README shows them).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '../../src/api/local-server.js';
import { uniqueName, type TestDesk } from './helpers.js';
import { openUi, type UiHarness } from './ui-harness.js';

const ROOT = resolve(import.meta.dirname, '../..');
const DOCS = join(ROOT, 'docs');

describe('Logs tab and resources in a browser', () => {
  let ui: UiHarness;
  let t: TestDesk;
  let server: LocalServer;
  let page: Page;
  const name = uniqueName('ui-logs');
  const say = (line: string) => t.desk.exec({ sandbox: name, command: `echo ${line} > /proc/1/fd/1`, user: 'root', mode: 'oneshot' });

  beforeAll(async () => {
    mkdirSync(DOCS, { recursive: true });
    ui = await openUi({ width: 1400, height: 800 });
    ({ t, server, page } = ui);
    const ref = (await t.desk.createSandbox({ name, backend: 'docker' })).sandbox.backendRef!;
    // Some CPU for the graphs to draw (test-owned container, ends by itself).
    execFileSync('docker', ['exec', '-d', ref, 'sh', '-c', 'timeout 20 yes > /dev/null']);
    for (const l of ['starting service', 'listening on 127.0.0.1:8080', 'warning: cache cold', 'ready']) await say(l);
  }, 180_000);
  afterAll(async () => {
    await ui?.close();
  }, 120_000);

  it('follows the container output in the Logs tab: a new line shows without a reload', async () => {
    await page.goto(server.appUrl());
    await page.getByTestId(`sandbox-row-${name}`).click({ timeout: 30_000 });
    await page.getByTestId('view-logs').click();
    await expect.poll(() => page.getByTestId('logs-state').textContent(), { timeout: 30_000 }).toBe('following');
    await expect.poll(() => page.getByTestId('logs-text').textContent(), { timeout: 30_000 }).toContain('listening on 127.0.0.1:8080');
    await say('request GET /health 200');
    await say('warning: slow request GET /api 1200ms');
    await expect.poll(() => page.getByTestId('logs-text').textContent(), { timeout: 30_000 }).toContain('slow request GET /api');
    await page.getByTestId('logs-search').fill('warning');
    await page.getByTestId('logs-search').press('Enter');
    await expect.poll(() => page.getByTestId('logs-matches').textContent()).toBe('1/2');
    expect(await page.locator('mark.hit').count()).toBe(2);
    await page.getByTestId('logs-next').click();
    await expect.poll(() => page.getByTestId('logs-matches').textContent()).toBe('2/2');
    // The sparkline in the row has had a few readings by now.
    await expect.poll(() => page.getByTestId(`resources-figures-${name}`).first().textContent(), { timeout: 30_000 }).toMatch(/%/);
    await page.screenshot({ path: join(DOCS, 'logs-tab.png') });
  }, 120_000);

  it('lists the sources; one that does not exist cannot be picked', async () => {
    const options = await page.getByTestId('logs-source').locator('option').allTextContents();
    expect(options).toContain('Container output');
    expect(options).toContain('Desktop launcher (not there)');
    expect(await page.getByTestId('logs-source').locator('option', { hasText: 'Desktop launcher' }).isDisabled()).toBe(true);
  });

  it('shows CPU and memory in Details and the engine in the status line', async () => {
    await page.getByTestId('view-details').click();
    await expect.poll(() => page.getByTestId(`resources-details-${name}`).isVisible(), { timeout: 30_000 }).toBe(true);
    await expect.poll(() => page.getByTestId('engine-status').textContent(), { timeout: 30_000 }).toMatch(/^Docker \d+\.\d+.* · images /);
    // A few readings, so the graph has a line.
    await page.waitForFunction(
      (n) =>
        (document.querySelector(`[data-testid="resources-details-${n}"] polyline`)?.getAttribute('points') ?? '').split(' ').length >= 3,
      name,
      { timeout: 30_000 },
    );
    await page.getByTestId('details-resources').screenshot({ path: join(DOCS, 'resources.png') });
  }, 120_000);
});
