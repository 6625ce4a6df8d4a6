/**
 * The Network panel end to end: a real core and a docker sandbox with `allow`, real traffic to the
 * test's own server containers; the window shows each connection, and "Allow this host" on a denied
 * line lets the next connection through. Saves docs/network-tab.png.
 */
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '../../src/api/local-server.js';
import { uniqueName, type TestDesk } from './helpers.js';
import { openUi, type UiHarness } from './ui-harness.js';
import { CLIENT, startTestServers, type TestServers } from './network/test-servers.js';

const ROOT = resolve(import.meta.dirname, '../..');

describe('the Network panel in the window, end to end', () => {
  let ui: UiHarness;
  let t: TestDesk;
  let srv: TestServers;
  let server: LocalServer;
  let page: Page;
  const name = uniqueName('netui');
  const sh = async (script: string) =>
    (await t.desk.exec({ sandbox: name, command: `${CLIENT}\n${script}`, timeoutSeconds: 60 })).stdout.trim();

  beforeAll(async () => {
    srv = startTestServers();
    ui = await openUi({ width: 1280, height: 900 });
    ({ t, server, page } = ui);
    await t.desk.createSandbox({ name, backend: 'docker', network: 'allow', allow: [`${srv.ip.a}:8000`] });
  }, 180_000);
  afterAll(async () => {
    srv?.dispose(); // first: a teardown that throws below must not leave the servers running
    await ui?.close();
  });

  it('shows allowed and denied connections live; "Allow this host" lets the next one through', async () => {
    // What the sandbox saw, line by line: a count of 0 below then says whether the proxy was reached.
    const [a, b, g] = (await sh(`via_proxy ${srv.ip.a} 8000; via_connect ${srv.ip.b} 8000; via_connect dns.google 443`)).split('\n');
    expect(a).toMatch(/^HTTP\/1.1 200 OK server-a$/);
    expect(b).toMatch(/^HTTP\/1.1 403 /);
    expect(g).toMatch(/^HTTP\/1.1 403 /);
    await page.goto(server.appUrl());
    await page.getByTestId(`sandbox-row-${name}`).click();
    await expect.poll(() => page.getByTestId(`sandbox-network-${name}`).textContent(), { timeout: 15_000 }).toContain('allow');
    await expect.poll(() => page.getByTestId('network-row').count(), { timeout: 15_000 }).toBe(3);
    const denied = page.getByTestId('network-row').filter({ hasText: srv.ip.b });
    await denied.getByTestId('network-allow-host').click();
    await expect.poll(() => t.desk.network.policy(name).allow, { timeout: 15_000 }).toContain(`${srv.ip.b}:8000`);
    expect(await sh(`via_proxy ${srv.ip.b} 8000`)).toMatch(/200 OK server-b$/);
    await expect.poll(() => page.getByTestId('network-row').count(), { timeout: 15_000 }).toBe(4);
    await page.getByTestId('network').screenshot({ path: join(ROOT, 'docs', 'network-tab.png') });
  });
});
