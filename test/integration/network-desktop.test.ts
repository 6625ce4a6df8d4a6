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
