/**
 * Standing attempts to get around the human's control of the bot desktop from the agent's shell (the
 * app's exec as the sandbox user, which is what MCP `execute_shell_command` runs as), against a real
 * Docker sandbox from sandbox-desk/desktop:latest with real Xvnc, Xfce and Chromium. Issue 18, defect 5.
 */
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium } from 'playwright-core';
import WebSocket from 'ws';
import { LocalServer } from '../../src/api/local-server.js';
import { CLOSE } from '../../src/shared/stream-close-codes.js';
import { tempDesk, uniqueName, type TestDesk } from '../integration/helpers.js';

const DESKTOP_IMAGE = 'sandbox-desk/desktop:latest';
const BIN = resolve(import.meta.dirname, '../../bin/sandbox-desk.js');

function upgradeStatus(url: string): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.on('open', () => (ws.close(), resolve(101)));
    ws.on('error', () => resolve(-1));
  });
}

describe("the lease cannot be bypassed from the agent's shell", () => {
  let t: TestDesk;
  let sb: string;
  let dir: string;
  const viewer = `viewer-${uniqueName('v')}`;
  // The agent's shell: the sandbox's default user, no other.
  const asAgent = (cmd: string) => t.desk.exec({ sandbox: sb, command: cmd, session: '__agent' });
  const asRoot = (cmd: string) => t.desk.exec({ sandbox: sb, command: cmd, session: '__probe', user: 'root' });

  beforeAll(async () => {
    t = tempDesk();
    sb = uniqueName('lease');
    dir = `/tmp/sandbox-desk-desktop-${sb}`;
    await t.desk.createSandbox({ name: sb, backend: 'docker', image: DESKTOP_IMAGE });
    await t.desk.desktop.start(sb, { geometry: '1024x768' });
  }, 180_000);
  afterAll(async () => {
    await t?.dispose();
  });

  it('status says the display is isolated: the desktop runs as its own user, not the sandbox user', async () => {
    const s = await t.desk.desktop.status(sb);
    expect(s).toMatchObject({
      running: true,
      displayIsolation: 'isolated',
      displayIsolationReason: null,
      displayUser: 'sdesk-display',
      shellDisplayGranted: false,
    });
    expect((await asAgent('id -un')).stdout).toBe('agent\n');
    const users = await asRoot(
      `for p in /proc/[0-9]*; do c=$(cat $p/comm 2>/dev/null); case $c in Xvnc|xfwm4|chromium|python3) stat -c "%U $c" $p;; esac; done | sort -u`,
    );
    expect(users.stdout).toMatch(/^sdesk-display Xvnc$/m);
    expect(users.stdout).toMatch(/^sdesk-display chromium$/m);
    expect(users.stdout).not.toMatch(/^(agent|root) (Xvnc|xfwm4|chromium|python3)$/m);
    const modes = await asRoot(`stat -c '%U %a %n' ${dir} ${dir}/rfb.sock ${dir}/cdp.sock ${dir}/Xauthority`);
    expect(modes.stdout).toBe(
      `sdesk-display 700 ${dir}\nsdesk-display 600 ${dir}/rfb.sock\nsdesk-display 600 ${dir}/cdp.sock\nsdesk-display 600 ${dir}/Xauthority\n`,
    );
  });

  it("xdotool from the agent's shell cannot move the pointer (read back through the core)", async () => {
    await t.desk.desktop.act(sb, { kind: 'move', x: 10, y: 11 });
    const plain = await asAgent('DISPLAY=:20 xdotool mousemove 77 66');
    expect(plain.exitCode).not.toBe(0);
    // Knowing where the cookie is does not help: the agent cannot read it.
    const guessed = await asAgent(`DISPLAY=:20 XAUTHORITY=${dir}/Xauthority xdotool mousemove 77 66`);
    expect(guessed.exitCode).not.toBe(0);
    const abstract = await asAgent('DISPLAY=unix:20 xdotool mousemove 77 66');
    expect(abstract.exitCode).not.toBe(0);
    expect(await t.desk.desktop.pointer(sb)).toEqual({ x: 10, y: 11 });
  });

  it("the agent's shell cannot read the X cookie or reach the RFB socket or the DevTools relay", async () => {
    expect((await asAgent(`cat ${dir}/Xauthority`)).exitCode).not.toBe(0);
    expect((await asAgent(`ls ${dir}`)).exitCode).not.toBe(0);
    for (const sock of ['rfb.sock', 'cdp.sock']) {
      const r = await asAgent(`socat -u OPEN:/dev/null UNIX-CONNECT:${dir}/${sock}`);
      expect(r.exitCode, sock).not.toBe(0);
      expect(r.stdout + r.stderr).toMatch(/Permission denied/);
    }
  });

  it('no DevTools port: 127.0.0.1:9222 answers nothing and nothing listens on TCP in the sandbox', async () => {
    const curl = await asAgent(
      `python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:9222/json/version", timeout=5)'`,
    );
    expect(curl.exitCode).not.toBe(0);
    expect(curl.stdout + curl.stderr).toMatch(/Connection refused/);
    // As root, every listening TCP socket and its process: none at all (Xvnc has no port either).
    const ss = await asRoot('ss -Hltnp');
    expect(ss.exitCode).toBe(0);
    expect(ss.stdout.trim()).toBe('');
  });

  it('desktop browser + connectOverCDP works while the agent holds the lease; refused and closed while a human holds it', async () => {
    const ep = await t.desk.desktop.browserEndpoint(sb);
    const remote = await chromium.connectOverCDP(ep.httpUrl);
    const page = await remote.contexts()[0]!.newPage();
    await page.setContent('<title>lease-marker</title>');
    expect(await page.title()).toBe('lease-marker');
    const disconnected = new Promise<void>((resolve) => remote.on('disconnected', () => resolve()));

    await t.desk.desktop.takeControl(sb, viewer);
    await disconnected;
    await expect(t.desk.desktop.browserEndpoint(sb)).rejects.toMatchObject({ code: 'human_has_control' });
    const version = await fetch(`${ep.httpUrl}/json/version`);
    expect(version.status).toBe(409);
    expect(((await version.json()) as { error: { code: string } }).error.code).toBe('human_has_control');
    expect(await upgradeStatus(ep.webSocketDebuggerUrl)).toBe(409);
    await expect(chromium.connectOverCDP(ep.httpUrl)).rejects.toThrow(/409|human_has_control/);

    await t.desk.desktop.giveBack(sb, viewer);
    const again = await chromium.connectOverCDP((await t.desk.desktop.browserEndpoint(sb)).httpUrl);
    // The browser lived on through the disconnect: the page made before is still there.
    const titles = await Promise.all(
      again
        .contexts()
        .flatMap((c) => c.pages())
        .map((p) => p.title()),
    );
    expect(titles).toContain('lease-marker');
    await again.close();
  });

  it('the endpoint refuses web pages (an Origin) and other Host names', async () => {
    const ep = await t.desk.desktop.browserEndpoint(sb);
    expect((await fetch(`${ep.httpUrl}/json/version`, { headers: { origin: 'http://evil.example' } })).status).toBe(403);
    const ws = await new Promise<number>((resolve) => {
      const s = new WebSocket(ep.webSocketDebuggerUrl, { origin: 'http://evil.example' });
      s.on('unexpected-response', (_q, res) => resolve(res.statusCode ?? 0));
      s.on('open', () => (s.close(), resolve(101)));
    });
    expect(ws).toBe(403);
  });

  it('--grant-shell-display: the desktop runs as the sandbox user and status says the display is shared', async () => {
    await t.desk.desktop.stop(sb);
    const s = await t.desk.desktop.start(sb, { geometry: '1024x768', grantShellDisplay: true });
    expect(s).toMatchObject({ running: true, displayIsolation: 'shared', displayUser: 'agent', shellDisplayGranted: true });
    expect(s.displayIsolationReason).toMatch(/granted/);
    // Granted means granted: the shell reaches the display with just DISPLAY.
    expect((await asAgent('DISPLAY=:20 xdotool mousemove 77 66')).exitCode).toBe(0);
    expect(await t.desk.desktop.pointer(sb)).toEqual({ x: 77, y: 66 });
    // And a later plain start adopts it, still saying so; stop then start again isolates it.
    expect((await t.desk.desktop.start(sb)).shellDisplayGranted).toBe(true);
    await t.desk.desktop.stop(sb);
    expect(await t.desk.desktop.start(sb)).toMatchObject({ displayIsolation: 'isolated', displayUser: 'sdesk-display' });
    expect((await asAgent('DISPLAY=:20 xdotool mousemove 5 5')).exitCode).not.toBe(0);
  });
});

describe('a sandbox image without the display user', () => {
  let t: TestDesk;
  let sb: string;
  const image = `sandbox-desk-test/desktop-nouser:${uniqueName('m')}`;

  beforeAll(async () => {
    // The desktop image minus its display user: what a third-party image with the packages looks like.
    execFileSync('docker', ['build', '-q', '-t', image, '-'], {
      input: `FROM ${DESKTOP_IMAGE}\nUSER root\nRUN userdel -r sdesk-display\nUSER agent\n`,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    t = tempDesk();
    sb = uniqueName('nouser');
    await t.desk.createSandbox({ name: sb, backend: 'docker', image });
  }, 180_000);
  afterAll(async () => {
    await t?.dispose();
    execFileSync('docker', ['image', 'rm', '-f', image], { stdio: 'ignore' });
  });

  it('status says shared, and why, before and after start; the desktop runs as the sandbox user', async () => {
    const before = await t.desk.desktop.status(sb);
    expect(before).toMatchObject({ running: false, displayIsolation: 'shared', displayUser: 'agent' });
    expect(before.displayIsolationReason).toMatch(/no user sdesk-display/);
    const s = await t.desk.desktop.start(sb, { geometry: '1024x768' });
    expect(s).toMatchObject({ running: true, displayIsolation: 'shared', displayUser: 'agent', shellDisplayGranted: false });
    expect(s.displayIsolationReason).toMatch(/no user sdesk-display.*shell can reach the display/);
    await t.desk.desktop.act(sb, { kind: 'move', x: 12, y: 13 });
    expect(await t.desk.desktop.pointer(sb)).toEqual({ x: 12, y: 13 });
  });

  it('a sandbox whose user is root (its shell reads everything): status does not claim isolation', async () => {
    const rootSb = uniqueName('rootuser');
    await t.desk.createSandbox({ name: rootSb, backend: 'docker', image: DESKTOP_IMAGE, user: 'root' });
    const s = await t.desk.desktop.status(rootSb);
    expect(s).toMatchObject({ running: false, displayIsolation: 'shared', displayUser: 'sdesk-display' });
    expect(s.displayIsolationReason).toMatch(/sandbox user is root/);
  });
});

/**
 * A person's screen viewer through the app's stream server (the window's WebSocket), with its own viewer
 * id; resolves once the screen is live (Xvnc's first bytes, the RFB version, came through).
 */
async function openViewer(server: LocalServer, sandbox: string, viewerId: string): Promise<{ ws: WebSocket; closed: Promise<number> }> {
  const ws = new WebSocket(server.issueScreenTicket(sandbox, viewerId).url);
  const closed = new Promise<number>((r) => ws.on('close', (code) => r(code)));
  await new Promise<void>((ok, fail) => {
    ws.once('message', () => ok());
    ws.once('close', (code) => fail(new Error(`the screen stream closed (${code}) before it was live`)));
    ws.once('error', fail);
  });
  return { ws, closed };
}

describe("over MCP, the issue's own steps (sandbox-desk mcp in its own process)", () => {
  let t: TestDesk;
  let client: Client;
  let server: LocalServer;
  const sb = uniqueName('mcplease');
  type ToolResult = { isError?: boolean; content: { type: string; text?: string }[] };
  const call = async (name: string, args: Record<string, unknown>) => {
    const r = (await client.callTool({ name, arguments: args })) as ToolResult;
    return { isError: r.isError === true, body: JSON.parse(r.content[0]!.text!) as Record<string, any> };
  };

  beforeAll(async () => {
    t = tempDesk();
    await t.desk.createSandbox({ name: sb, backend: 'docker', image: DESKTOP_IMAGE });
    client = new Client({ name: 'lease-bypass-test', version: '1.0.0' });
    const env = { ...(process.env as Record<string, string>), SANDBOX_DESK_HOME: t.dataDir };
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env, stderr: 'pipe' }));
    // The app's core, where the person's viewer is: the stream server that gates their input by the lease.
    server = new LocalServer({ desk: t.desk });
    await server.listen();
  }, 180_000);
  afterAll(async () => {
    await client?.close();
    await server?.close();
    await t?.dispose();
  });

  it('execute_shell_command cannot move the pointer; browser_endpoint is refused while a human holds control and its open CDP connection is closed', async () => {
    expect((await call('desktop_start', { sandbox: sb, geometry: '1024x768' })).body).toMatchObject({
      running: true,
      displayIsolation: 'isolated',
    });
    expect((await call('click', { sandbox: sb, x: 30, y: 40 })).body).toMatchObject({ via: 'rfb', pointer: { x: 30, y: 40 } });
    const shell = await call('execute_shell_command', { sandbox: sb, command: 'DISPLAY=:20 xdotool mousemove 77 66' });
    expect(shell.body.exitCode).not.toBe(0);
    expect(await t.desk.desktop.pointer(sb)).toEqual({ x: 30, y: 40 });

    const ep = (await call('browser_endpoint', { sandbox: sb })).body as { httpUrl: string };
    const remote = await chromium.connectOverCDP(ep.httpUrl);
    const disconnected = new Promise<void>((r) => remote.on('disconnected', () => r()));
    // The human takes control in another process (this one); the MCP server's endpoint sees the lease.
    await t.desk.desktop.takeControl(sb, 'mcp-human');
    await disconnected;
    const refused = await call('browser_endpoint', { sandbox: sb });
    expect(refused.isError).toBe(true);
    expect(refused.body.error.code).toBe('human_has_control');
    expect((await call('click', { sandbox: sb, x: 5, y: 5 })).body.error.code).toBe('human_has_control');
    expect(await t.desk.desktop.pointer(sb)).toEqual({ x: 30, y: 40 });

    await t.desk.desktop.giveBack(sb, 'mcp-human');
    const back = (await call('browser_endpoint', { sandbox: sb })).body as { httpUrl: string };
    const again = await chromium.connectOverCDP(back.httpUrl);
    expect(again.contexts().length).toBeGreaterThan(0);
    await again.close();
  });
  it("the person keeps control through a kill + restart behind the app's back and the agent's sandbox_restore; only their give-back releases it (issue 35, item 6)", async () => {
    const person = uniqueName('person');
    const clickError = async () => (await call('click', { sandbox: sb, x: 9, y: 9 })).body.error?.code as string | undefined;
    const taken = await call('sandbox_checkpoint', { sandbox: sb });
    expect(taken.isError, JSON.stringify(taken.body)).toBe(false);
    const checkpoint = (taken.body as { checkpoint: { id: string } }).checkpoint.id;
    try {
      // The person's viewer is open and holds control; the container is killed and started behind the app's back.
      let viewer = await openViewer(server, sb, person);
      await t.desk.desktop.takeControl(sb, person);
      const container = execFileSync('docker', ['ps', '-q', '--filter', `label=io.sandbox-desk.sandbox=${sb}`], {
        encoding: 'utf8',
      }).trim();
      expect(container).toMatch(/^[0-9a-f]+$/);
      execFileSync('docker', ['kill', container], { stdio: 'ignore' });
      expect(await viewer.closed).toBe(CLOSE.streamGone);
      execFileSync('docker', ['start', container], { stdio: 'ignore' });
      expect(t.desk.desktop.lease(sb)).toMatchObject({ holder: 'human', viewerId: person });
      // Refused for the lease, before anything looks for the desktop (which the kill ended).
      expect(await clickError()).toBe('human_has_control');

      // The agent starts the desktop again, the window reconnects with the same viewer id, the agent restores.
      expect((await call('desktop_start', { sandbox: sb, geometry: '1024x768' })).body).toMatchObject({ running: true });
      viewer = await openViewer(server, sb, person);
      const restored = await call('sandbox_restore', { sandbox: sb, checkpoint });
      expect(restored.isError, JSON.stringify(restored.body)).toBe(false);
      expect(await viewer.closed).toBe(CLOSE.streamGone);
      expect(t.desk.desktop.lease(sb)).toMatchObject({ holder: 'human', viewerId: person });
      expect(await clickError()).toBe('human_has_control');

      // The person's own give-back releases it: the agent's click is no longer refused for the lease — it
      // lands, since a restore now starts again the desktop that was running (issue 36, item 3).
      await t.desk.desktop.giveBack(sb, person);
      expect(await clickError()).toBeUndefined();
    } finally {
      await t.desk.checkpoints.remove(checkpoint);
    }
  }, 180_000);
});
