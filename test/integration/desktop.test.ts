/**
 * The bot desktop, for real: Xvnc + Xfce + Chromium inside a Docker sandbox, started through
 * execPrefix; streamed over an exec relay and a ticketed loopback WebSocket; noVNC in headless
 * Chromium; the control lease; the forwarded DevTools endpoint.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import WebSocket from 'ws';
import { LocalServer } from '../../src/api/local-server.js';
import { CLOSE } from '../../src/api/tickets.js';
import { RfbClient, type ByteTransport } from '../../src/desktop/rfb/rfb-client.js';
import { decodePngSize } from '../../src/desktop/png-encode.js';
import { SandboxDeskError } from '../../src/shared/errors.js';
import { ProviderRegistry } from '../../src/sandbox/registry.js';
import { LocalProvider } from '../../src/sandbox/local/local-provider.js';
import { DockerProvider } from '../../src/sandbox/docker/docker-provider.js';
import { HEADLESS_CHROMIUM, tempDesk, uniqueName, type TestDesk } from './helpers.js';

const DESKTOP_IMAGE = 'sandbox-desk/desktop:latest';

function wsTransport(ws: WebSocket): ByteTransport {
  return {
    write: (b) => ws.send(b),
    onData: (l) => ws.on('message', (d: Buffer) => l(d)),
    onClose: (l) => ws.on('close', () => l()),
    close: () => ws.close(),
  };
}

function openWs(url: string, origin?: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, origin ? { origin } : {});
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

function closeCode(url: string, origin?: string): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, origin ? { origin } : {});
    ws.on('close', (code) => resolve(code));
    ws.on('error', () => undefined);
  });
}

/** A 1×1-colour framebuffer would mean nothing was drawn. */
function colourCount(rgba: Uint8Array, limit = 16): number {
  const seen = new Set<number>();
  for (let i = 0; i < rgba.length && seen.size < limit; i += 4 * 97) seen.add((rgba[i]! << 16) | (rgba[i + 1]! << 8) | rgba[i + 2]!);
  return seen.size;
}

describe('bot desktop in a docker sandbox', () => {
  let t: TestDesk;
  let sb: string;
  let server: LocalServer;
  let browser: Browser;
  const inSandbox = (cmd: string) => t.desk.exec({ sandbox: sb, command: cmd, session: '__probe', user: 'root' });

  beforeAll(async () => {
    t = tempDesk();
    sb = uniqueName('desk');
    await t.desk.createSandbox({ name: sb, backend: 'docker', image: DESKTOP_IMAGE });
    server = new LocalServer({ desk: t.desk, ticketTtlMs: 1500 });
    await server.listen();
    browser = await chromium.launch(HEADLESS_CHROMIUM);
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await t.dispose();
  });

  it("starts through execPrefix, as the desktop's own user (not the sandbox user), and reports itself", async () => {
    const s = await t.desk.desktop.start(sb, { geometry: '1280x800' });
    expect(s).toMatchObject({
      running: true,
      placement: 'sandbox',
      display: ':20',
      geometry: '1280x800',
      missing: [],
      leaseHolder: 'agent',
    });
    const owner = await inSandbox(
      `stat -c %U $(ls -d /tmp/sandbox-desk-desktop-${sb})/rfb.sock; stat -c %a /tmp/sandbox-desk-desktop-${sb}/rfb.sock`,
    );
    expect(owner.stdout).toBe('sdesk-display\n600\n');
    const users = await inSandbox(
      `for p in /proc/[0-9]*; do c=$(cat $p/comm 2>/dev/null); case $c in Xvnc|xfwm4|chromium) stat -c "%U $c" $p;; esac; done | sort -u`,
    );
    expect(users.stdout).toContain('sdesk-display Xvnc');
    expect(users.stdout).not.toMatch(/^(root|agent) (Xvnc|xfwm4|chromium)/m);
  });

  it('an already running desktop is adopted, not duplicated', async () => {
    const before = await inSandbox('cat /proc/[0-9]*/comm 2>/dev/null | grep -c "^Xvnc$"');
    await t.desk.desktop.start(sb);
    const after = await inSandbox('cat /proc/[0-9]*/comm 2>/dev/null | grep -c "^Xvnc$"');
    expect(before.stdout).toBe('1\n');
    expect(after.stdout).toBe('1\n');
  });

  it('publishes nothing: no docker port, no TCP listener at all in the sandbox (VNC and DevTools are Unix sockets)', async () => {
    const id = (await t.desk.inspectSandbox(sb)).backendRef!;
    expect(execFileSync('docker', ['port', id], { encoding: 'utf8' }).trim()).toBe('');
    // Listening sockets (state 0A) inside the sandbox: none (Chromium's DevTools is a pipe, see cdp-pipe.py).
    const listen = await inSandbox(`awk 'NR>1 && $4=="0A" {print $2}' /proc/net/tcp /proc/net/tcp6`);
    expect(listen.stdout.trim().split('\n').filter(Boolean)).toEqual([]);
  });

  it('a Node RFB client completes the handshake over the ticketed WebSocket and gets a framebuffer update', async () => {
    const { url } = server.issueScreenTicket(sb);
    const rfb = await RfbClient.connect(wsTransport(await openWs(url)));
    expect([rfb.width, rfb.height]).toEqual([1280, 800]);
    await rfb.requestUpdate(false);
    expect(rfb.stats.updates).toBeGreaterThanOrEqual(1);
    // Right after start Xfce may not have painted yet (a black screen is not a broken stream): keep
    // taking incremental updates until it has.
    await expect
      .poll(
        async () => {
          await rfb.requestUpdate(true, 2000).catch(() => undefined);
          return colourCount(rfb.framebuffer());
        },
        { timeout: 15_000 },
      )
      .toBeGreaterThan(1);
    rfb.close();
  });

  it('screenshot: a PNG of the real framebuffer, of the requested geometry, not one colour', async () => {
    const { image: png } = await t.desk.desktop.screenshot(sb);
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect(decodePngSize(png)).toEqual({ width: 1280, height: 800 });
    expect(png.length).toBeGreaterThan(5000);
  });

  it('noVNC in headless Chromium connects through the viewer page and paints the canvas', async () => {
    const page = await browser.newPage();
    await page.goto(server.viewerUrl(sb));
    await page.waitForFunction(() => (window as unknown as { sandboxDeskConnected?: boolean }).sandboxDeskConnected === true, undefined, {
      timeout: 30_000,
    });
    await page.waitForTimeout(500);
    const colours = await page.evaluate(() => {
      const c = document.querySelector('#screen canvas') as HTMLCanvasElement;
      const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
      const seen = new Set<number>();
      for (let i = 0; i < d.length; i += 4 * 101) seen.add((d[i]! << 16) | (d[i + 1]! << 8) | d[i + 2]!);
      return { n: seen.size, w: c.width, h: c.height };
    });
    expect(colours).toMatchObject({ w: 1280, h: 800 });
    expect(colours.n).toBeGreaterThan(1);
    // The page's lease buttons go through the contract (/api/call/takeControl, giveBack): no side door.
    const lease = () =>
      page.evaluate(
        () => (window as unknown as { sandboxDeskLease?: { holder: string; viewerId: string | null } }).sandboxDeskLease ?? null,
      );
    const viewerId = await page.evaluate(() => (window as unknown as { sandboxDeskViewerId: string }).sandboxDeskViewerId);
    await expect.poll(lease, { timeout: 10_000 }).toMatchObject({ holder: 'agent' });
    await page.click('#control');
    await expect.poll(lease, { timeout: 10_000 }).toMatchObject({ holder: 'human', viewerId });
    expect(t.desk.desktop.lease(sb)).toMatchObject({ holder: 'human', viewerId });
    await page.click('#control');
    await expect.poll(lease, { timeout: 10_000 }).toMatchObject({ holder: 'agent' });
    const sideDoor = await fetch(`${server.origin}/api/desktop/${sb}/ticket`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${server.token}` },
    });
    expect(sideDoor.status).toBe(404);
    await page.close();
  });

  it('several viewers watch at once', async () => {
    const a = await RfbClient.connect(wsTransport(await openWs(server.issueScreenTicket(sb).url)));
    const b = await RfbClient.connect(wsTransport(await openWs(server.issueScreenTicket(sb).url)));
    await Promise.all([a.requestUpdate(false), b.requestUpdate(false)]);
    expect(a.stats.updates).toBeGreaterThan(0);
    expect(b.stats.updates).toBeGreaterThan(0);
    a.close();
    b.close();
  });

  it('the control lease: a viewer without it cannot move the pointer; with it, it can; the agent may look but not act meanwhile', async () => {
    await t.desk.desktop.act(sb, { kind: 'move', x: 10, y: 10 });
    const grant = server.issueScreenTicket(sb);
    const rfb = await RfbClient.connect(wsTransport(await openWs(grant.url)));
    await rfb.requestUpdate(false);
    rfb.pointer(600, 400, 0);
    await rfb.requestUpdate(true, 2000).catch(() => undefined);
    expect(await t.desk.desktop.pointer(sb)).toEqual({ x: 10, y: 10 });

    await t.desk.desktop.takeControl(sb, grant.viewerId);
    await new Promise((r) => setTimeout(r, 300)); // the gate re-reads the lease every 250 ms
    rfb.pointer(600, 400, 0);
    await rfb.requestUpdate(true, 2000).catch(() => undefined);
    await expect.poll(() => t.desk.desktop.pointer(sb), { timeout: 5000 }).toEqual({ x: 600, y: 400 });

    const err = await t.desk.desktop.act(sb, { kind: 'click', x: 5, y: 5 }).catch((e: unknown) => e);
    expect((err as SandboxDeskError).code).toBe('human_has_control');
    // A screenshot is read-only: allowed while the person drives (issue 36).
    expect(decodePngSize((await t.desk.desktop.screenshot(sb)).image)).toEqual({ width: 1280, height: 800 });

    // A clean close by the holder hands control back to the agent.
    rfb.close();
    await expect.poll(() => t.desk.desktop.lease(sb).holder, { timeout: 5000 }).toBe('agent');
    await t.desk.desktop.act(sb, { kind: 'move', x: 7, y: 7 });
    expect(await t.desk.desktop.pointer(sb)).toEqual({ x: 7, y: 7 });
  });

  it("control hands the screen back as it found it: the holder resizes the remote to its pane, give back restores the agent's size (issue 36)", async () => {
    const warned = vi.spyOn(t.desk.log, 'warn');
    const mine = await t.desk.desktop.screenshot(sb);
    expect(mine.frame).toMatchObject({ width: 1280, height: 800, scale: 1 });
    const grant = server.issueScreenTicket(sb);
    const rfb = await RfbClient.connect(wsTransport(await openWs(grant.url)));
    await rfb.requestUpdate(false);
    // Through the API the window calls, then what its "Resize to pane" sends: SetDesktopSize to the pane.
    expect(await server.call('takeControl', { sandbox: sb, viewerId: grant.viewerId })).toMatchObject({ ok: { holder: 'human' } });
    await new Promise((r) => setTimeout(r, 300)); // the gate re-reads the lease every 250 ms
    await rfb.resize(696, 758);

    // Meanwhile the agent sees the person's screen as it is; "at most 800 wide" is all of it, scale 1.
    await expect.poll(async () => (await t.desk.desktop.screenshot(sb)).frame.screenWidth, { timeout: 5000 }).toBe(696);
    const during = await t.desk.desktop.screenshot(sb, { maxWidth: 800 });
    expect(during.frame).toMatchObject({ width: 696, height: 758, scale: 1, screenWidth: 696, screenHeight: 758 });
    expect(decodePngSize(during.image)).toEqual({ width: 696, height: 758 });
    await expect(t.desk.desktop.act(sb, { kind: 'move', x: 5, y: 5 })).rejects.toMatchObject({ code: 'human_has_control' });

    expect(await server.call('giveBack', { sandbox: sb, viewerId: grant.viewerId })).toMatchObject({ ok: { holder: 'agent' } });
    // The agent's next screenshot has its old geometry — and so does the X server itself.
    const after = await t.desk.desktop.screenshot(sb, { maxWidth: 4096 });
    expect(after.frame).toMatchObject({ width: 1280, height: 800, scale: 1, screenWidth: 1280, screenHeight: 800 });
    expect(decodePngSize(after.image)).toEqual({ width: 1280, height: 800 });
    expect((await t.desk.desktop.status(sb)).geometry).toBe('1280x800');
    // And the agent acts in it again: its frame's coordinates are the screen's.
    const moved = await t.desk.desktop.act(sb, { kind: 'move', x: 1279, y: 799 }, { frameId: after.frame.frameId });
    expect(moved.pointer).toEqual({ x: 1279, y: 799 });

    // Taken and given back without a resize: the screen already has the agent's size and is left alone.
    await server.call('takeControl', { sandbox: sb, viewerId: grant.viewerId });
    await server.call('giveBack', { sandbox: sb, viewerId: grant.viewerId });
    expect((await t.desk.desktop.screenshot(sb)).frame).toMatchObject({ width: 1280, height: 800 });
    expect(warned.mock.calls).toEqual([]);
    warned.mockRestore();
    rfb.close();
  });

  it('tickets: used twice, expired, or from a foreign Origin are refused with distinct close codes', async () => {
    const used = server.issueScreenTicket(sb);
    const first = await openWs(used.url);
    expect(await closeCode(used.url)).toBe(CLOSE.ticketUsed);
    first.close();
    const late = server.issueScreenTicket(sb);
    await new Promise((r) => setTimeout(r, 1700));
    expect(await closeCode(late.url)).toBe(CLOSE.ticketExpired);
    expect(await closeCode(server.issueScreenTicket(sb).url, 'https://evil.example')).toBe(CLOSE.originRefused);
    expect(await closeCode(`ws://127.0.0.1:${server.port}/ws/desktop/${sb}?ticket=nope`)).toBe(CLOSE.ticketUnknown);
    expect(new Set([CLOSE.ticketUsed, CLOSE.ticketExpired, CLOSE.originRefused, CLOSE.ticketUnknown]).size).toBe(4);
  });

  it('the HTTP side wants the token', async () => {
    expect((await fetch(`${server.origin}/desktop/${sb}`)).status).toBe(401);
    expect((await fetch(`${server.origin}/api/desktop/${sb}/ticket`, { method: 'POST' })).status).toBe(401);
    expect((await fetch(server.viewerUrl(sb))).status).toBe(200);
  });

  it("Playwright on the host drives the sandbox's browser through the forwarded DevTools endpoint", async () => {
    await inSandbox(`printf '<title>inside %s</title><h1>hello</h1>' "$(hostname)" > /tmp/page.html && chmod 644 /tmp/page.html`);
    const ep = await t.desk.desktop.browserEndpoint(sb);
    expect(ep.httpUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const remote = await chromium.connectOverCDP(ep.httpUrl);
    const context = remote.contexts()[0]!;
    const page = await context.newPage();
    await page.goto('file:///tmp/page.html');
    expect(await page.title()).toBe(`inside ${sb}`);
    // The agent types into that page through the real X keyboard (xdotool inside the sandbox).
    await page.setContent('<input id=q autofocus style="font-size:40px;width:90%">');
    await page.bringToFront();
    const box = (await page.locator('#q').boundingBox())!;
    // Page coordinates → screen coordinates: the window's position plus its frame and toolbars.
    const shift = await page.evaluate(() => ({
      x: window.screenX + (window.outerWidth - window.innerWidth),
      y: window.screenY + (window.outerHeight - window.innerHeight),
    }));
    await t.desk.desktop.act(sb, { kind: 'click', x: Math.round(shift.x + box.x + 20), y: Math.round(shift.y + box.y + box.height / 2) });
    await t.desk.desktop.act(sb, { kind: 'type', text: 'Hello_world: 1+1=2?' });
    await expect.poll(() => page.inputValue('#q'), { timeout: 10_000 }).toBe('Hello_world: 1+1=2?');
    await page.close();
    await remote.close();
    // The profile lives under the desktop user's home, not /tmp, and not where the agent's shell reads.
    expect((await inSandbox('ls -d /home/sdesk-display/.config/sandbox-desk/chromium')).exitCode).toBe(0);
  });

  it('agent actions: type into a focused window and read the pointer', async () => {
    await t.desk.desktop.act(sb, { kind: 'move', x: 321, y: 123 });
    expect(await t.desk.desktop.pointer(sb)).toEqual({ x: 321, y: 123 });
    await t.desk.desktop.act(sb, { kind: 'key', keys: 'ctrl+l' });
    await t.desk.desktop.act(sb, { kind: 'scroll', x: 640, y: 400, direction: 'down', amount: 2 });
    await expect(t.desk.desktop.act(sb, { kind: 'key', keys: 'rm -rf /; echo' })).rejects.toMatchObject({ code: 'invalid_input' });
  });

  it('resize through RFB changes the real geometry', async () => {
    await t.desk.desktop.resize(sb, 1024, 768);
    expect((await t.desk.desktop.status(sb)).geometry).toBe('1024x768');
    await t.desk.desktop.resize(sb, 1280, 800);
  });

  it('stop ends the whole process group', async () => {
    const s = await t.desk.desktop.stop(sb);
    expect(s.running).toBe(false);
    const left = await inSandbox(
      'cat /proc/[0-9]*/comm 2>/dev/null | grep -cE "^(Xvnc|xfwm4|xfdesktop|xfce4-panel|chromium|dbus-daemon)$" || true',
    );
    expect(left.stdout.trim()).toBe('0');
    await expect(t.desk.desktop.screenshot(sb)).rejects.toMatchObject({ code: 'desktop_not_running' });
  });
});

describe('desktop placement and images', () => {
  let t: TestDesk;
  beforeAll(() => {
    const registry = new ProviderRegistry();
    const local = new LocalProvider();
    registry.registerBuiltin(local);
    registry.registerBuiltin(new DockerProvider());
    // A backend that cannot host streams (like a hosted service without an exec prefix).
    registry.register(Object.assign(Object.create(local) as LocalProvider, { name: 'blind', supportsStreams: false, isContainer: true }));
    t = tempDesk({ registry });
  });
  afterAll(async () => t.dispose());

  it('a backend without streams: refused, with a reason naming the backend and the setting; never the host', async () => {
    const name = uniqueName('blind');
    await t.desk.createSandbox({ name, backend: 'blind', defaultCwd: '/tmp' });
    const s = await t.desk.desktop.status(name);
    expect(s).toMatchObject({ placement: 'refused', running: false });
    expect(s.reason).toMatch(/blind/);
    expect(s.reason).toMatch(/--placement host/);
    await expect(t.desk.desktop.start(name)).rejects.toMatchObject({ code: 'placement_refused' });
  });

  it('the local backend places its desktop on the host', async () => {
    const name = uniqueName('loc');
    await t.desk.createSandbox({ name, backend: 'local', defaultCwd: '/tmp' });
    expect((await t.desk.desktop.status(name)).placement).toBe('host');
  });

  it('an image without Xvnc: status lists what is missing and names the desktop image; start says the same', async () => {
    const name = uniqueName('plain');
    await t.desk.createSandbox({ name, backend: 'docker' });
    const s = await t.desk.desktop.status(name);
    expect(s.missing).toEqual(expect.arrayContaining(['Xvnc', 'xfwm4', 'chromium']));
    expect(s.reason).toMatch(/sandbox-desk\/desktop:latest/);
    await expect(t.desk.desktop.start(name)).rejects.toThrow(/sandbox-desk\/desktop:latest/);
  });
});
