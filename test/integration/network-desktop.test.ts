/**
 * The desktop's Chromium under a network policy: driven over CDP from the host, it reaches the allowed
 * test server through the egress proxy and gets the proxy's refusal from the other; both on the log.
 */
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';
import { startTestServers, type TestServers } from './network/test-servers.js';

describe('the desktop browser under network policy allow (real engine, Chromium over CDP)', () => {
  let t: TestDesk;
  let srv: TestServers;
  const sb = uniqueName('netdesk');

  beforeAll(async () => {
    srv = startTestServers();
    t = tempDesk();
    await t.desk.createSandbox({
      name: sb,
      backend: 'docker',
      image: 'sandbox-desk/desktop:latest',
      network: 'allow',
      allow: [`${srv.ip.a}:8000`],
    });
    await t.desk.desktop.start(sb, { geometry: '1280x800' });
  }, 300_000);
  afterAll(async () => {
    await t?.dispose();
    srv?.dispose();
  });

  // Runs first, while nobody has used the browser: what is on the log now, Chromium did on its own.
  it('an idle Chromium makes no connection of its own (no component updates, safe browsing, pings…)', async () => {
    // allow mode logs every connection the sandbox tries; ~20 s covers Chromium's start-up fetches
    // (component updater, variations, safe browsing list, domain reliability) that followed the launch.
    await new Promise((r) => setTimeout(r, 20_000));
    const own = t.desk.network.log(sb).filter((e) => e.host !== srv.ip.a && e.host !== srv.ip.b);
    // With the old flags: clients2.google.com (component updates, network time) among them. What is
    // NOT solved yet (issue 36 item 6, open): Chromium's Google sign-in and GCM check-in
    // (accounts.google.com, www.google.com, android.clients.google.com) still try to connect; none of
    // the command-line switches tried stops them. Anything else is a regression.
    const stillOpen = new Set(['accounts.google.com', 'www.google.com', 'android.clients.google.com']);
    expect(own.filter((e) => !stillOpen.has(e.host)).map((e) => `${e.host}:${e.port} ${e.verdict} ${e.process ?? '?'}`)).toEqual([]);
  }, 40_000);

  it('reaches the allowed server and is refused on the other, each on the log', async () => {
    const ep = await t.desk.desktop.browserEndpoint(sb);
    const remote = await chromium.connectOverCDP(ep.httpUrl);
    try {
      const page = await remote.contexts()[0]!.newPage();
      await page.goto(`http://${srv.ip.a}:8000/`);
      expect(await page.textContent('body')).toContain('server-a');
      const denied = await page.goto(`http://${srv.ip.b}:8000/`);
      expect(denied?.status()).toBe(403);
      expect(await page.textContent('body')).toContain('Sandbox Desk denied');
      await page.close();
    } finally {
      await remote.close();
    }
    const log = t.desk.network.log(sb).map((e) => [e.host, e.verdict]);
    expect(log).toEqual(
      expect.arrayContaining([
        [srv.ip.a, 'allowed'],
        [srv.ip.b, 'denied'],
      ]),
    );
  });
});
