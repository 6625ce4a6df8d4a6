/**
 * Desktop VM templates end to end against real QEMU (TCG): `image template build debian-desktop
 * --desktop` starts the bot desktop in the build VM and checks it (readiness, the Xfce pieces, a real
 * VNC frame) before the memory is saved; two VMs created from it each come with that desktop running,
 * handed over to the desktop service at the create (no desktop start), a real frame read over the app's
 * screen stream at once, and each with an X cookie of its own (the template's is replaced per copy).
 * Its own template (debian-desktop, the image's memory advice: 2 GiB, 1 CPU): the run's shared one is
 * debian-test, no desktop.
 *
 * It is also the desktop VM image's test (issue 20; it was qemu-desktop-image.test.ts, folded in so one
 * cold desktop boot under TCG serves both — the template build is that boot): real parts end to end, a
 * VM from debian-desktop with the bot desktop (Xvnc, Xfce, Chromium) running in it, a page served
 * inside the VM (python3's http.server on the guest's loopback) opened in the VM's Chromium through
 * `desktop browser` (the CDP bridge over the VM's SSH streams), its title read over CDP, and a
 * screenshot that shows the Chromium window with the page (its colour covers much of the screen; the
 * blank desktop before had none of it). Done in a copy made from the template, which also proves the
 * handed-over desktop's browser works.
 * Slow (a desktop VM's boot and desktop start under TCG, once); SANDBOX_DESK_SKIP_SLOW=1 skips it
 * locally, never in CI.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import sharp from 'sharp';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxInfo } from '../../src/api/contract.js';
import { RfbClient, transportFromStreams } from '../../src/desktop/rfb/rfb-client.js';
import { imageSearchPath } from '../../src/sandbox/qemu/vm-image.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

const SKIP = process.env.SANDBOX_DESK_SKIP_SLOW === '1';
// No --memory: the template and its copies get the image's memory advice (2 GiB), which the image's part checks.
const OPTIONS = { cpus: '1', accel: 'tcg' } as const;
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

describe.skipIf(SKIP)('desktop VM templates: the desktop runs in the saved memory (slow: real VMs under TCG)', () => {
  let t: TestDesk;
  const a = uniqueName('dta');
  const b = uniqueName('dtb');
  const title = `vm page ${a}`;
  const infos: Record<string, SandboxInfo> = {};
  const progress: Record<string, string[]> = { [a]: [], [b]: [] };
  const buildOutput: string[] = [];
  const sh = async (name: string, command: string): Promise<string> => {
    const r = await t.desk.exec({ sandbox: name, command, timeoutSeconds: 300 });
    expect(r.exitCode, r.stderr).toBe(0);
    return r.stdout.trim();
  };

  beforeAll(async () => {
    if (!imageSearchPath('/nonexistent').some((d) => existsSync(join(d, 'debian-desktop', 'image.json'))))
      throw new Error('this test needs the debian-desktop VM image: run `npm run setup` (it builds it)');
    t = tempDesk();
    const t0 = Date.now();
    const log = (line: string) => process.stderr.write(`${((Date.now() - t0) / 1000).toFixed(1)} s ${line}\n`);
    const build = t.desk.images.buildVmTemplate(
      { image: 'debian-desktop', cpus: Number(OPTIONS.cpus), desktop: true },
      {
        onEvent: (e: { kind: string; text?: string }) => {
          if (e.kind !== 'output' || !e.text) return;
          buildOutput.push(e.text);
          log(`build: ${e.text}`);
        },
      },
    );
    const task = await build.done;
    if (task.state !== 'succeeded') throw new Error(`the desktop template build ${task.state}: ${task.error?.message ?? ''}`);
    for (const name of [a, b]) {
      const onProgress = (e: { step: string; message: string }) => {
        progress[name]!.push(`${e.step}: ${e.message}`);
        log(`${name} ${e.step}: ${e.message}`);
      };
      infos[name] = (
        await t.desk.createSandbox({ name, backend: 'qemu', image: 'debian-desktop', options: { ...OPTIONS } }, { onProgress })
      ).sandbox;
    }
  }, 2_400_000);

  afterAll(async () => {
    await t?.dispose();
  }, 300_000);

  it('the build started the desktop and checked it before saving', () => {
    expect(buildOutput.join('\n')).toMatch(/the desktop is up: Xfce running, a 1280x800 frame read from its VNC server/);
  });

  it('both VMs were restored with the desktop running, handed over at the create', () => {
    for (const name of [a, b]) {
      expect(infos[name]!.details).toMatchObject({ fromTemplate: true, desktopFromTemplate: true });
      expect(progress[name]).toContainEqual(expect.stringMatching(/^desktop: the desktop runs since the template .*no desktop start/));
    }
  });

  it("the first frame comes over the app's screen stream with no desktop start, the whole screen painted", async () => {
    for (const name of [a, b]) {
      const t0 = performance.now();
      const stream = await t.desk.desktop.openScreenStream(name);
      const rfb = await RfbClient.connect(
        transportFromStreams(stream.stdout, stream.stdin, () => stream.kill()),
        { timeoutMs: 120_000 },
      );
      await rfb.requestUpdate(false, 120_000);
      const ms = performance.now() - t0;
      expect([rfb.width, rfb.height]).toEqual([1280, 800]);
      // Painted: the Xfce desktop and panel, not a black screen.
      const fb = rfb.framebuffer();
      let lit = 0;
      for (let i = 0; i < fb.length; i += 4) if (fb[i]! + fb[i + 1]! + fb[i + 2]! > 30) lit++;
      expect(lit / (rfb.width * rfb.height)).toBeGreaterThan(0.5);
      rfb.close();
      stream.kill();
      process.stderr.write(`${name}: first frame ${ms.toFixed(0)} ms after the create\n`);
      const status = await t.desk.desktop.status(name);
      expect(status).toMatchObject({ running: true, display: ':20', geometry: '1280x800' });
    }
  }, 600_000);

  it('the Xfce pieces run in each copy, in a folder named after the sandbox', async () => {
    for (const name of [a, b]) {
      const out = await sh(
        name,
        `for p in xfsettingsd xfwm4 xfdesktop xfce4-panel Xvnc; do pgrep -x -u sdesk-display "$p" >/dev/null && echo "$p"; done; ` +
          `sudo -n test -S /tmp/sandbox-desk-desktop-${name}/rfb.sock && echo socket`,
      );
      expect(out.split('\n')).toEqual(['xfsettingsd', 'xfwm4', 'xfdesktop', 'xfce4-panel', 'Xvnc', 'socket']);
    }
  }, 300_000);

  it("each copy's X cookie is its own (not the template's, not the other copy's), and it is what reaches the display", async () => {
    const cookie = async (name: string) =>
      sh(name, `sudo -n -u sdesk-display xauth -f /tmp/sandbox-desk-desktop-${name}/Xauthority list | awk '{print $3}'`);
    const [ca, cb] = [await cookie(a), await cookie(b)];
    expect(ca).toMatch(/^[0-9a-f]{32}$/);
    expect(cb).toMatch(/^[0-9a-f]{32}$/);
    expect(ca).not.toBe(cb);
    // An app-owned X client with the file reaches the display (the desktop's own actions use it).
    await sh(a, `sudo -n -u sdesk-display env DISPLAY=:20 XAUTHORITY=/tmp/sandbox-desk-desktop-${a}/Xauthority xdpyinfo >/dev/null`);
  }, 300_000);

  // The desktop VM image's checks, in copy a (the first frame above was read from its handed-over desktop).
  it(
    "boots with the image's memory advice (2 GiB) and starts Xvnc, Xfce and Chromium",
    async () => {
      expect((await t.desk.inspectSandbox(a)).details?.memoryMiB).toBe(2048);
      const s = await t.desk.desktop.start(a);
      expect(s.running).toBe(true);
      expect(s.missing).toEqual([]);
      expect(s.accel).toBe('tcg');
      expect(s.browserNote).toMatch(/TCG.*Chromium works but is slow/);
      // Chromium's processes, as the display user, and no DevTools port (a pipe).
      await expect
        .poll(async () => sh(a, 'pgrep -u sdesk-display -c -x chromium || true'), { timeout: 300_000, interval: 3000 })
        .not.toBe('0');
      await sh(a, 'pgrep -x Xvnc && pgrep -x xfwm4 && pgrep -x xfce4-panel');
    },
    SLOW,
  );

  it(
    "opens a page served in the VM in the VM's Chromium through `desktop browser`, reads its title over CDP, and the screenshot shows it",
    async () => {
      const blank = (await t.desk.desktop.screenshot(a)).image;
      await sh(
        a,
        `mkdir -p /tmp/${a} && printf '<title>%s</title><body style="margin:0;background:#ff00ff"><h1>served in the VM</h1>' '${title}' > /tmp/${a}/index.html && chmod -R a+rX /tmp/${a} && cd /tmp/${a} && (setsid nohup python3 -m http.server ${PORT} --bind 127.0.0.1 </dev/null >/dev/null 2>&1 &) && for i in $(seq 1 60); do python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:${PORT}/")' 2>/dev/null && exit 0; sleep 1; done; exit 1`,
      );
      const ep = await t.desk.desktop.browserEndpoint(a).catch(async (err: unknown) => {
        // What the guest says, so a failure here is diagnosable from the log alone.
        const { dir } = await t.desk.desktop.logLocation(a);
        const r = await t.desk.exec({
          sandbox: a,
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
              shot = (await t.desk.desktop.screenshot(a)).image;
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
