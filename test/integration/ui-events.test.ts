/**
 * Pushed state end to end: the real renderer in Debian's Chromium, the real core, real Docker, and the
 * built CLI in ANOTHER process. A `cd` the CLI makes shows in the window's sessions table without a
 * reload (and without the window polling for it); a hidden tab makes no requests and catches up when
 * shown; the event stream cut shows "Reconnecting…", loses nothing, and catches up; a container killed
 * behind the app's back becomes an event.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { BrowserContext, Page, WebSocketRoute } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '../../src/api/local-server.js';
import type { CoreEvent } from '../../src/shared/core-events.js';
import { uniqueName, type TestDesk } from './helpers.js';
import { ARTIFACTS, openUi, type UiHarness } from './ui-harness.js';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const BIN = join(ROOT, 'bin', 'sandbox-desk.js');

describe('pushed state in the window', () => {
  let ui: UiHarness;
  let t: TestDesk;
  let server: LocalServer;
  let context: BrowserContext;
  let page: Page;
  const name = uniqueName('ev');
  const session = 'cli-s';
  /** Every API call and ticket request the page makes (the hidden tab must make none). */
  const requests: string[] = [];
  /** The event stream's routes: the test cuts them, and refuses new ones while `cut`. */
  const routes: WebSocketRoute[] = [];
  let cut = false;

  /** The built CLI in its own process, on the same data directory (async: this process serves the window). */
  const cli = (...args: string[]) =>
    run(process.execPath, [BIN, ...args], { env: { ...process.env, SANDBOX_DESK_HOME: t.dataDir }, timeout: 120_000 });
  const cwdCell = () => page.getByTestId(`session-cwd-${session}`).textContent();

  beforeAll(async () => {
    if (!existsSync(join(ROOT, 'dist', 'src', 'cli', 'main.js'))) throw new Error('the CLI is not built: run `npm run build`');
    ui = await openUi({ width: 1400, height: 860 });
    ({ t, server, context, page } = ui);
    await t.desk.createSandbox({ name, backend: 'docker', image: 'sandbox-desk/base:latest' });
    page.on('request', (r) => {
      if (r.url().includes('/api/call/')) requests.push(r.url().replace(/^.*\/api\/call\//, ''));
    });
    await page.routeWebSocket(/\/ws\/events/, (ws) => {
      if (cut) return void ws.close({ code: 1011, reason: 'cut by the test' });
      ws.connectToServer();
      routes.push(ws);
    });
  }, 180_000);
  afterAll(async () => {
    await ui?.close();
  });

  it('the window opens on the sandbox; the event stream goes live', async () => {
    await page.goto(server.appUrl());
    await page.getByTestId(`sandbox-row-${name}`).click();
    await expect.poll(() => page.evaluate(() => document.querySelector('[data-testid="events-reconnecting"]') === null)).toBe(true);
    await expect.poll(() => routes.length, { timeout: 15_000 }).toBeGreaterThan(0);
    await page.evaluate(() => ((window as unknown as { __sdeskSameDocument: number }).__sdeskSameDocument = 1));
  }, 60_000);

  it('a `cd /tmp` made by the CLI in another process shows in the sessions table without a reload', async () => {
    const before = requests.length;
    await cli('exec', name, '--session', session, '--', 'cd /tmp');
    await expect.poll(cwdCell, { timeout: 15_000 }).toContain('/tmp');
    // The same document (no reload), and it re-read the sessions because an event said so.
    expect(await page.evaluate(() => (window as unknown as { __sdeskSameDocument?: number }).__sdeskSameDocument)).toBe(1);
    expect(requests.slice(before)).toContain('listSessions');
    await page.screenshot({ path: join(ARTIFACTS, 'events-01-cli-cd.png') });
  }, 150_000);

  it('with the stream live, the window does not poll: an idle stretch makes no API calls', async () => {
    // First the reads the previous test's events asked for (they may still be arriving on a loaded
    // machine): the stretch starts once a second has passed without a call.
    for (let quiet = -1, i = 0; quiet !== requests.length && i < 20; i++) {
      quiet = requests.length;
      await page.waitForTimeout(1000);
    }
    const before = requests.length;
    // Longer than every panel's polling interval (2 s); a timer-driven panel would have called by now.
    await page.waitForTimeout(4500);
    expect(requests.slice(before)).toEqual([]);
  }, 30_000);

  it('a hidden tab makes no requests, and catches up when shown again', async () => {
    const other = await context.newPage();
    await other.bringToFront();
    let hidden = await page.evaluate(() => document.visibilityState);
    if (hidden !== 'hidden') {
      // Headless Chromium may keep background tabs "visible": say hidden the way the page would learn it.
      await page.evaluate(() => {
        Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
        document.dispatchEvent(new Event('visibilitychange'));
      });
      hidden = await page.evaluate(() => document.visibilityState);
    }
    expect(hidden).toBe('hidden');
    const before = requests.length;
    await cli('exec', name, '--session', session, '--', 'cd /var');
    await cli('exec', name, '--session', session, '--', 'cd /usr');
    await page.waitForTimeout(3000);
    expect(requests.slice(before)).toEqual([]);
    expect(await cwdCell()).toContain('/tmp');
    await page.evaluate(() => {
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'visible' });
      document.dispatchEvent(new Event('visibilitychange'));
    });
    await page.bringToFront();
    await other.close();
    await expect.poll(cwdCell, { timeout: 15_000 }).toContain('/usr');
  }, 150_000);

  it('the event stream cut: "Reconnecting…", nothing lost, caught up without a reload', async () => {
    cut = true;
    for (const r of routes.splice(0)) await r.close({ code: 1011, reason: 'cut by the test' });
    await expect.poll(() => page.getByTestId('events-reconnecting').isVisible(), { timeout: 15_000 }).toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, 'events-02-reconnecting.png') });
    // While cut, a change in another process: the fallback poll shows it, or the catch-up after.
    await cli('exec', name, '--session', session, '--', 'cd /srv');
    cut = false;
    await expect.poll(() => page.getByTestId('events-reconnecting').isVisible(), { timeout: 30_000 }).toBe(false);
    await expect.poll(cwdCell, { timeout: 15_000 }).toContain('/srv');
    // Live again: the next change arrives by event.
    await cli('exec', name, '--session', session, '--', 'cd /opt');
    await expect.poll(cwdCell, { timeout: 15_000 }).toContain('/opt');
    expect(await page.evaluate(() => (window as unknown as { __sdeskSameDocument?: number }).__sdeskSameDocument)).toBe(1);
  }, 200_000);

  it('the task list shows an operation the CLI ran in another process', async () => {
    const other = uniqueName('evop');
    await cli('sandbox', 'create', other, '--backend', 'docker', '--image', 'sandbox-desk/base:latest');
    await page.getByTestId('tasks-toggle').click();
    await expect.poll(() => page.getByTestId('task-list').textContent(), { timeout: 15_000 }).toContain(`Create of ${other}`);
    await page.screenshot({ path: join(ARTIFACTS, 'events-03-tasks.png') });
    await cli('sandbox', 'rm', other, '--force');
    await expect.poll(() => page.getByTestId(`sandbox-row-${other}`).count(), { timeout: 15_000 }).toBe(0);
  }, 200_000);

  it("a container killed behind the app's back becomes an event, and the list says it stopped", async () => {
    const seen: CoreEvent[] = [];
    const listening = t.desk.events.listen();
    const sub = t.desk.events.onEvent((e) => seen.push(e));
    try {
      // Let the Docker events follower connect before the kill (it runs only while someone listens; the window does).
      const ref = t.desk.store.sandboxes.get(name)!.backendRef!;
      await run('docker', ['kill', ref]);
      await expect
        .poll(() => seen.some((e) => e.topic === 'sandbox' && e.sandbox === name && /^engine:(kill|die)$/.test(e.reason)), {
          timeout: 30_000,
        })
        .toBe(true);
      await expect.poll(() => page.getByTestId(`sandbox-state-${name}`).textContent(), { timeout: 15_000 }).toMatch(/stopped/i);
    } finally {
      sub.dispose();
      listening.dispose();
    }
  }, 120_000);
});
