/**
 * The Images view and the create dialog in the real renderer (browser mode, Debian's Chromium) against
 * the real core and Docker engine: a tiny image built from a folder with its steps showing as they
 * happen, then picked in the create dialog. Saves docs/images-view.png and docs/create-dialog.png.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalServer } from '../../src/api/local-server.js';
import { HEADLESS_CHROMIUM, tempDesk, uniqueName, type TestDesk } from './helpers.js';

const ROOT = resolve(import.meta.dirname, '../..');

describe('images in the window, end to end', () => {
  let t: TestDesk;
  let server: LocalServer;
  let browser: Browser;
  let page: Page;
  let context: string;
  const marker = uniqueName('uimg');
  const tag = `sdtest/${marker}:1`;

  beforeAll(async () => {
    if (!existsSync(join(ROOT, 'dist', 'renderer', 'index.html')))
      throw new Error('the renderer is not built: run `npm run build:renderer` (setup does)');
    t = tempDesk();
    server = new LocalServer({ desk: t.desk });
    await server.listen();
    browser = await chromium.launch(HEADLESS_CHROMIUM);
    page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    context = mkdtempSync(join(tmpdir(), 'sdesk-uimg-'));
    // Slow enough to watch: a step that writes a line a second.
    writeFileSync(
      join(context, 'Dockerfile'),
      `FROM sandbox-desk/base:latest\nRUN for i in 1 2 3; do echo "${marker} line $i"; sleep 1; done\nLABEL demo=${marker}\n`,
    );
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await t?.dispose();
    spawnSync('docker', ['rmi', '-f', tag]);
    rmSync(context, { recursive: true, force: true });
  });

  it('opens the Images view, builds a tiny image from a folder with visible progress, and lists it', async () => {
    await page.goto(server.appUrl());
    await page.getByTestId('open-images').click();
    await page.getByTestId('images-view').waitFor();
    await expect.poll(() => page.getByTestId('image-row-sandbox-desk/base:latest').isVisible(), { timeout: 15_000 }).toBe(true);
    await page.getByTestId('image-build-tag').fill(tag);
    await page.getByTestId('image-build-context').fill(context);
    await page.getByTestId('image-build-start').click();
    // The running step and its output show while the build runs, Cancel beside them.
    await expect.poll(() => page.getByTestId('image-build-status').textContent(), { timeout: 30_000 }).toMatch(/Step 2\/\d+: RUN for i/);
    await expect.poll(() => page.getByTestId('image-build-log').textContent(), { timeout: 15_000 }).toContain(`${marker} line 2`);
    expect(await page.getByTestId('image-build-cancel').isVisible()).toBe(true);
    await expect.poll(() => page.getByTestId('image-build-status').textContent(), { timeout: 60_000 }).toBe(`Built ${tag}.`);
    await expect.poll(() => page.getByTestId(`image-row-${tag}`).isVisible(), { timeout: 15_000 }).toBe(true);
    await page.getByTestId('images-view').screenshot({ path: join(ROOT, 'docs', 'images-view.png') });
  });

  it('the create dialog picks that image from the list, suggests it for a typo, and shows Advanced', async () => {
    await page.getByRole('button', { name: 'Close' }).click();
    await page.getByTestId('create-sandbox').click();
    await page.getByTestId('create-name').fill('demo-1');
    await page.getByTestId('create-image-pick').selectOption(tag);
    expect(await page.getByTestId('create-image').inputValue()).toBe(tag);
    await page.getByTestId('create-image').fill(tag.replace(':1', '').replace('sdtest/', 'sdtset/'));
    await expect.poll(() => page.getByTestId('create-image-suggestion').textContent()).toContain(`Did you mean ${tag}?`);
    await page.getByTestId('create-advanced').locator('summary').click();
    await page.getByTestId('create-cpus').fill('2');
    await page.getByTestId('create-memory').fill('1024');
    const labels = await page.getByTestId('create-backend').locator('option').allTextContents();
    expect(labels).toEqual(expect.arrayContaining(['docker (container)', 'local (this machine)', 'qemu (virtual machine)']));
    await page.locator('form.modal').screenshot({ path: join(ROOT, 'docs', 'create-dialog.png') });
  });

  it('for qemu: VM fields, the acceleration select whole (not cut off), no Docker limits', async () => {
    // Runs on its own too (-t): then the page and the dialog are opened here.
    if (page.url() === 'about:blank') await page.goto(server.appUrl());
    if (!(await page.getByTestId('create-backend').isVisible())) await page.getByTestId('create-sandbox').click();
    await page.getByTestId('create-backend').selectOption('qemu');
    const accel = page.getByTestId('create-vm-accel');
    await accel.waitFor();
    // Its chosen option's text fits: the box is at least as wide as what it shows, inside the dialog.
    const fit = await accel.evaluate((el) => {
      const s = el as HTMLSelectElement;
      const form = s.closest('form')!.getBoundingClientRect();
      const box = s.getBoundingClientRect();
      const probe = document.createElement('span');
      probe.style.font = getComputedStyle(s).font;
      probe.textContent = s.options[s.selectedIndex]!.text;
      document.body.appendChild(probe);
      const textWidth = probe.getBoundingClientRect().width;
      probe.remove();
      return { inside: box.left >= form.left && box.right <= form.right, roomy: box.width >= textWidth + 24 };
    });
    expect(fit).toEqual({ inside: true, roomy: true });
    expect(await page.getByTestId('create-cpus').count()).toBe(0);
    await page.getByRole('button', { name: 'Cancel' }).click();
  });
});
