/**
 * The desktop VM image (issue 20), real parts end to end: a VM booted from debian-desktop under TCG,
 * the bot desktop started in it (Xvnc, Xfce, Chromium), a page served inside the VM (python3's
 * http.server on the guest's loopback) opened in the VM's Chromium through `desktop browser` (the CDP
 * bridge over the VM's SSH streams), its title read over CDP, and a screenshot that shows the Chromium
 * window with the page (its colour covers much of the screen; the blank desktop before had none of it).
 * Slow (minutes under TCG); SANDBOX_DESK_SKIP_SLOW=1 skips it locally, never in CI.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import sharp from 'sharp';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { imageSearchPath } from '../../src/sandbox/qemu/vm-image.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

const SKIP = process.env.SANDBOX_DESK_SKIP_SLOW === '1';
const SLOW = 1_800_000;
const DOCS = resolve(import.meta.dirname, '../../docs');
const PORT = 8765;

/** Share of pixels of the page's colour (#ff00ff) in a PNG screenshot. */
async function magentaShare(png: Buffer): Promise<number> {
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  let n = 0;
  for (let i = 0; i < data.length; i += 3) if (data[i]! > 220 && data[i + 1]! < 40 && data[i + 2]! > 220) n++;
  return n / (info.width * info.height);
}

describe.skipIf(SKIP)('the debian-desktop VM image: the bot desktop with Chromium in a VM (slow: real VM under TCG)', () => {
  let t: TestDesk;
  const vm = uniqueName('vmdesk');
  const title = `vm page ${vm}`;
  const sh = async (command: string): Promise<string> => {
    const r = await t.desk.exec({ sandbox: vm, command, timeoutSeconds: 300 });
    expect(r.exitCode, r.stderr).toBe(0);
    return r.stdout.trim();
  };

  beforeAll(async () => {
    if (!imageSearchPath('/nonexistent').some((d) => existsSync(join(d, 'debian-desktop', 'image.json'))))
      throw new Error('this test needs the debian-desktop VM image: run `npm run setup` (it builds it)');
    t = tempDesk();
    await t.desk.createSandbox({ name: vm, backend: 'qemu', image: 'debian-desktop', options: { accel: 'tcg', bootTimeout: '1500' } });
  }, SLOW);
  afterAll(async () => {
    await t?.dispose();
  }, 300_000);

  it(
    "boots with the image's memory advice (2 GiB) and starts Xvnc, Xfce and Chromium",
    async () => {
      expect((await t.desk.inspectSandbox(vm)).details?.memoryMiB).toBe(2048);
      const s = await t.desk.desktop.start(vm);
      expect(s.running).toBe(true);
      expect(s.missing).toEqual([]);
      expect(s.accel).toBe('tcg');
      expect(s.browserNote).toMatch(/TCG.*Chromium works but is slow/);
      // Chromium's processes, as the display user, and no DevTools port (a pipe).
      await expect
        .poll(async () => sh('pgrep -u sdesk-display -c -x chromium || true'), { timeout: 300_000, interval: 3000 })
        .not.toBe('0');
      await sh('pgrep -x Xvnc && pgrep -x xfwm4 && pgrep -x xfce4-panel');
    },
    SLOW,
  );

  it(
    "opens a page served in the VM in the VM's Chromium through `desktop browser`, reads its title over CDP, and the screenshot shows it",
    async () => {
      const blank = (await t.desk.desktop.screenshot(vm)).image;
      await sh(
        `mkdir -p /tmp/${vm} && printf '<title>%s</title><body style="margin:0;background:#ff00ff"><h1>served in the VM</h1>' '${title}' > /tmp/${vm}/index.html && chmod -R a+rX /tmp/${vm} && cd /tmp/${vm} && (setsid nohup python3 -m http.server ${PORT} --bind 127.0.0.1 </dev/null >/dev/null 2>&1 &) && for i in $(seq 1 60); do python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:${PORT}/")' 2>/dev/null && exit 0; sleep 1; done; exit 1`,
      );
      const ep = await t.desk.desktop.browserEndpoint(vm).catch(async (err: unknown) => {
        // What the guest says, so a failure here is diagnosable from the log alone.
        const { dir } = await t.desk.desktop.logLocation(vm);
        const r = await t.desk.exec({
          sandbox: vm,
          command: `sudo ls -la ${dir}; sudo tail -n 20 ${dir}/chromium.log`,
          timeoutSeconds: 300,
        });
        throw new Error(`${(err as Error).message}\nin the guest:\n${r.stdout}${r.stderr}`);
      });
      expect(ep.httpUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const remote = await chromium.connectOverCDP(ep.httpUrl, { timeout: 300_000 });
      try {
        const page = await remote.contexts()[0]!.newPage();
        await page.goto(`http://127.0.0.1:${PORT}/`, { timeout: 300_000 });
        expect(await page.title()).toBe(title);
        await page.bringToFront();
        // The screen shows the Chromium window with the page: the page's colour covers a large part of it.
        let shot = blank;
        await expect
          .poll(
            async () => {
              shot = (await t.desk.desktop.screenshot(vm)).image;
              return magentaShare(shot);
            },
            { timeout: 180_000, interval: 3000 },
          )
          .toBeGreaterThan(0.3);
        expect(await magentaShare(blank)).toBeLessThan(0.01);
        mkdirSync(DOCS, { recursive: true });
        writeFileSync(join(DOCS, 'qemu-debian-desktop-chromium.png'), shot);
        await page.close();
      } finally {
        await remote.close();
      }
    },
    SLOW,
  );
});
