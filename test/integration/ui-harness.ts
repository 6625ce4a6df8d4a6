/**
 * The window in browser mode for an end-to-end test: a temp core, its local server and Debian's
 * Chromium on one page. One copy of the set-up the UI tests share (and of its teardown order:
 * browser, then server, then the core).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { LocalServer } from '../../src/api/local-server.js';
import type { SandboxDeskOptions } from '../../src/api/sandbox-desk.js';
import { HEADLESS_CHROMIUM, tempDesk, type TestDesk } from './helpers.js';

const ROOT = resolve(import.meta.dirname, '../..');
/** Where the UI tests write their screenshots when they are not updating docs/. */
export const ARTIFACTS = join(ROOT, 'test', 'artifacts');

export interface UiHarness {
  t: TestDesk;
  server: LocalServer;
  browser: Browser;
  /** The page's own context (permissions, downloads, second pages of the same session). */
  context: BrowserContext;
  page: Page;
  close(): Promise<void>;
}

export interface OpenUiOptions {
  /** Options of the temp core (e.g. `plugins: false`). */
  desk?: Omit<SandboxDeskOptions, 'dataDir'>;
  /** More of the browser context's options (`acceptDownloads`…). */
  context?: BrowserContextOptions;
}

export async function openUi(viewport: { width: number; height: number }, opts: OpenUiOptions = {}): Promise<UiHarness> {
  if (!existsSync(join(ROOT, 'dist', 'renderer', 'index.html')))
    throw new Error('the renderer is not built: run `npm run build:renderer` (setup does)');
  mkdirSync(ARTIFACTS, { recursive: true });
  const t = tempDesk(opts.desk);
  const server = new LocalServer({ desk: t.desk });
  await server.listen();
  const browser = await chromium.launch(HEADLESS_CHROMIUM);
  const context = await browser.newContext({ viewport, ...opts.context });
  const page = await context.newPage();
  return {
    t,
    server,
    browser,
    context,
    page,
    close: async () => {
      await browser.close();
      await server.close();
      await t.dispose();
    },
  };
}
