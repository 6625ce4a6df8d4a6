/**
 * A desktop that dies inside its sandbox is pushed, not found out on the next action: with a client on
 * `/ws/events` (the window), the core watches each running desktop over an idle RFB connection, and
 * Xvnc's socket closing becomes a `desktop` event (running: false, cause: crashed); the status then
 * says it crashed — and the window, open on the screen, shows it without any action. A resize is told
 * the same way, when the X server applied it. Real parts: the desktop image (Xvnc, Xfce, Chromium) in
 * Docker, the local server's ticketed event stream, the renderer in Debian's Chromium.
 */
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { CoreEvent, EventFrame, StreamGrant } from '../../src/api/contract.js';
import type { LocalServer } from '../../src/api/local-server.js';
import { callApi, uniqueName, type TestDesk } from './helpers.js';
import { openUi, type UiHarness } from './ui-harness.js';

const DESKTOP_IMAGE = 'sandbox-desk/desktop:latest';
const DOCS = join(resolve(import.meta.dirname, '../..'), 'docs');

describe('a desktop dying inside its sandbox is pushed', () => {
  let ui: UiHarness;
  let t: TestDesk;
  let server: LocalServer;
  let page: Page;
  let ws: WebSocket;
  const events: CoreEvent[] = [];
  const sb = uniqueName('death');
  const call = <T>(method: string, params: unknown): Promise<T> => callApi<T>(server, method, params);
  const desktopEvents = () => events.flatMap((e) => (e.topic === 'desktop' && e.sandbox === sb ? [e] : []));

  beforeAll(async () => {
    ui = await openUi({ width: 1280, height: 800 });
    ({ t, server, page } = ui);
    await t.desk.createSandbox({ name: sb, backend: 'docker', image: DESKTOP_IMAGE });
    // The window's event stream: while it listens, the core watches desktops.
    const grant = await call<StreamGrant>('eventsTicket', {});
    ws = new WebSocket(grant.url, { origin: server.origin });
    ws.on('message', (d: Buffer) => {
      const f = JSON.parse(d.toString()) as EventFrame;
      if (f.type === 'event') events.push(f.event);
    });
    await new Promise((r, j) => ws.once('open', r).once('error', j));
  }, 180_000);
  afterAll(async () => {
    ws?.close();
    await ui?.close();
  });

  it('a resize is told when the X server applied it; Xvnc killed is a `desktop` event running:false, cause crashed', async () => {
    const started = await call<{ running: boolean }>('desktopStart', { sandbox: sb });
    expect(started.running).toBe(true);
    await expect.poll(() => desktopEvents().map((e) => e.cause), { timeout: 10_000 }).toContain('started');

    // Let the watch connect (its first exchange is over when a resize reaches it). The size alternates:
    // a resize that went through before the watch connected leaves nothing for a same-size one to change.
    let attempt = 0;
    await expect
      .poll(
        async () => {
          const [w, h] = attempt++ % 2 === 0 ? [1024, 768] : [1152, 864];
          await t.desk.desktop.resize(sb, w, h).catch(() => undefined);
          return desktopEvents().some((e) => e.cause === 'resized');
        },
        { timeout: 90_000, interval: 3000 },
      )
      .toBe(true);

    // The window, on the screen of that sandbox (it reads the status once: from then on, events).
    await page.goto(server.appUrl());
    await page.getByTestId(`sandbox-row-${sb}`).click({ timeout: 30_000 });
    await page.getByTestId('view-workspace').click();
    await page.getByTestId('lease-indicator').waitFor({ timeout: 60_000 });

    // Kill Xvnc inside this test's own container (exact process name: no pattern that could match the exec itself).
    const ref = t.desk.store.sandboxes.get(sb)!.backendRef!;
    execFileSync('docker', ['exec', ref, 'pkill', '-KILL', '-x', 'Xvnc']);
    await expect.poll(() => desktopEvents().find((e) => e.cause === 'crashed'), { timeout: 90_000 }).toMatchObject({ running: false });

    const status = await call<{ running: boolean; ended?: { how: string; detail: string } }>('desktopStatus', { sandbox: sb });
    expect(status.running).toBe(false);
    expect(status.ended?.how).toBe('crashed');
    expect(status.ended?.detail).toMatch(/Xvnc/);
    // The window shows it, with no click: pushed.
    await page.getByTestId('desktop-crashed').waitFor({ timeout: 60_000 });
    expect(await page.getByTestId('desktop-crashed').textContent()).toMatch(/The desktop crashed at .*Xvnc/);
    await page.getByTestId('screen-pane').screenshot({ path: join(DOCS, 'desktop-crashed.png') });
    await page.getByTestId('desktop-crash-log').click();
    await expect.poll(() => page.getByTestId('logs-source').inputValue(), { timeout: 30_000 }).toBe('desktop');
  }, 420_000);

  it('a start after the crash clears it; a stop made here is `stopped`, never `crashed`', async () => {
    expect((await call<{ running: boolean }>('desktopStart', { sandbox: sb })).running).toBe(true);
    const crashesBefore = desktopEvents().filter((e) => e.cause === 'crashed').length;
    const stopped = await call<{ running: boolean; ended?: unknown }>('desktopStop', { sandbox: sb });
    expect(stopped.running).toBe(false);
    expect(stopped.ended).toBeUndefined();
    await expect.poll(() => desktopEvents().at(-1)?.cause, { timeout: 10_000 }).toBe('stopped');
    // Give a wrongly kept watch the time to misreport, then check it did not.
    await new Promise((r) => setTimeout(r, 3000));
    expect(desktopEvents().filter((e) => e.cause === 'crashed').length).toBe(crashesBefore);
  }, 240_000);
});
