/**
 * End to end in the browser (issue 14 item 4): a file dropped on the terminal lands in that
 * terminal's cwd (the toast names the measured path), the terminal reads it, and the file panel
 * downloads it back byte-identical. Real core, Docker, xterm.js and Debian's Chromium; the drop is a
 * DataTransfer dispatched in the page, as a person's drag delivers it. Screenshot: files-panel.png
 * (in docs/ with SDESK_UPDATE_DOCS=1, else test/artifacts/).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '../../src/api/local-server.js';
import { uniqueName, type TestDesk } from './helpers.js';
import { ARTIFACTS, openUi, type UiHarness } from './ui-harness.js';
import { bufferOf } from './ui-terminal-text.js';

const ROOT = resolve(import.meta.dirname, '../..');
const DOCS = process.env.SDESK_UPDATE_DOCS === '1' ? join(ROOT, 'docs') : ARTIFACTS;
const SIZE = 3 * 1024 * 1024 + 7;

/** The dropped file's bytes, made the same way here and in the page: i*7+3 mod 251. */
const pattern = () => Buffer.from(Array.from({ length: SIZE }, (_, i) => (i * 7 + 3) % 251));

describe('files in the window: drop on the terminal, read it there, download it back (browser)', () => {
  let ui: UiHarness;
  let t: TestDesk;
  let server: LocalServer;
  let page: Page;
  const sb = uniqueName('uifiles');
  const folder = uniqueName('dropdir');
  let home = '';

  beforeAll(async () => {
    ui = await openUi({ width: 1440, height: 900 }, { context: { acceptDownloads: true } });
    ({ t, server, page } = ui);
    home = (await t.desk.createSandbox({ name: sb, backend: 'docker', image: 'sandbox-desk/base:latest' })).sandbox.home!;
  }, 180_000);
  afterAll(async () => {
    await ui?.close();
  }, 120_000);

  it('a file dropped on the terminal lands in its cwd; the toast names the path; the terminal reads it', async () => {
    await page.goto(server.appUrl());
    await page.getByTestId(`sandbox-row-${sb}`).click();
    await page.getByTestId('view-workspace').click();
    await page.getByTestId('terminal-tab-term-1').waitFor({ timeout: 30_000 });
    await expect.poll(() => bufferOf(page, 'term-1'), { timeout: 30_000 }).toMatch(/[$#] *$/m);
    await page.getByTestId('terminal-term-1').click();
    await page.keyboard.type(`mkdir -p ~/${folder} && cd ~/${folder} && echo "in=$PWD"`);
    await page.keyboard.press('Enter');
    await expect.poll(() => bufferOf(page, 'term-1'), { timeout: 20_000 }).toMatch(new RegExp(`^in=.*/${folder}$`, 'm'));
    // The session's record follows the prompt; the drop asks for the session's cwd after it.
    await expect
      .poll(async () => t.desk.listSessions(sb).find((s) => s.key === 'term-1')?.cwd, { timeout: 20_000 })
      .toBe(`${home}/${folder}`);

    await page.evaluate(
      ({ size }) => {
        const bytes = new Uint8Array(size);
        for (let i = 0; i < size; i++) bytes[i] = (i * 7 + 3) % 251;
        const dt = new DataTransfer();
        dt.items.add(new File([bytes], 'dropped file.bin'));
        const zone = document.querySelector('[data-testid="terminal-drop"]')!;
        for (const type of ['dragenter', 'dragover', 'drop'])
          zone.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, dataTransfer: dt }));
      },
      { size: SIZE },
    );
    const toast = page.getByTestId('upload-path');
    await toast.waitFor({ timeout: 60_000 });
    expect(await toast.textContent()).toBe(`${home}/${folder}/dropped file.bin`);

    await page.getByTestId('terminal-term-1').click();
    // The first half of the hash only: a narrow terminal would wrap the whole line.
    await page.keyboard.type(`echo "sha=$(sha256sum 'dropped file.bin' | cut -c1-32)"`);
    await page.keyboard.press('Enter');
    const want = createHash('sha256').update(pattern()).digest('hex');
    await expect.poll(() => bufferOf(page, 'term-1'), { timeout: 20_000 }).toMatch(new RegExp(`^sha=${want.slice(0, 32)}$`, 'm'));
  }, 180_000);

  it('the file panel lists it and downloads it back byte-identical', async () => {
    await page.getByTestId('view-details').click();
    const panel = page.getByTestId('files-panel');
    await panel.waitFor({ timeout: 30_000 });
    await panel.getByRole('button', { name: new RegExp(folder) }).click();
    await expect.poll(() => panel.getByTestId('files-path').textContent(), { timeout: 20_000 }).toBe(`${home}/${folder}`);
    const downloading = page.waitForEvent('download', { timeout: 60_000 });
    await panel.getByRole('button', { name: 'Download dropped file.bin' }).click();
    const download = await downloading;
    expect(download.suggestedFilename()).toBe('dropped file.bin');
    const path = await download.path();
    expect(createHash('sha256').update(readFileSync(path)).digest('hex')).toBe(createHash('sha256').update(pattern()).digest('hex'));

    // The picture for the README: the panel in a folder with a file and a subfolder.
    await panel.getByTestId('files-new-folder').click();
    await page.getByLabel('New folder name').fill('results');
    await page.getByRole('button', { name: 'Create' }).click();
    await panel.getByRole('button', { name: /results/ }).waitFor({ timeout: 20_000 });
    await panel.screenshot({ path: join(DOCS, 'files-panel.png') });
  }, 180_000);
});
