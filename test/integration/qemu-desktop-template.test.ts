/**
 * Desktop VM templates end to end against real QEMU (TCG): `image template build debian-desktop
 * --desktop` starts the bot desktop in the build VM and checks it (readiness, the Xfce pieces, a real
 * VNC frame) before the memory is saved; two VMs created from it each come with that desktop running,
 * handed over to the desktop service at the create (no desktop start), a real frame read over the app's
 * screen stream at once, and each with an X cookie of its own (the template's is replaced per copy).
 * Its own template (debian-desktop, 1536 MiB, 1 CPU): the run's shared one is debian-test, no desktop.
 * Slow (a desktop VM's boot and desktop start under TCG, once); SANDBOX_DESK_SKIP_SLOW=1 skips it.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxInfo } from '../../src/api/contract.js';
import { RfbClient, transportFromStreams } from '../../src/desktop/rfb/rfb-client.js';
import { imageSearchPath } from '../../src/sandbox/qemu/vm-image.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

const SKIP = process.env.SANDBOX_DESK_SKIP_SLOW === '1';
const OPTIONS = { memory: '1536', cpus: '1', accel: 'tcg' } as const;

describe.skipIf(SKIP)('desktop VM templates: the desktop runs in the saved memory (slow: real VMs under TCG)', () => {
  let t: TestDesk;
  const a = uniqueName('dta');
  const b = uniqueName('dtb');
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
      { image: 'debian-desktop', memory: Number(OPTIONS.memory), cpus: Number(OPTIONS.cpus), desktop: true },
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
});
