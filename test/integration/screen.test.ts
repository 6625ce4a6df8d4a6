/**
 * The agent's screen, for real (issue 19): an agent (the MCP SDK client against `sandbox-desk mcp`)
 * waits for a page to settle, takes a scaled screenshot, clicks a button by the scaled coordinates,
 * and the page — read over CDP — says where it was clicked; a frame from before a resize is refused.
 */
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodePngSize } from '../../src/desktop/png-encode.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

const execFileP = promisify(execFile);
const BIN = resolve(import.meta.dirname, '../../bin/sandbox-desk.js');
type ToolResult = {
  isError?: boolean;
  content: { type: string; text?: string; data?: string; mimeType?: string }[];
  structuredContent?: Record<string, any>;
};

describe('the agent screen over MCP', () => {
  let t: TestDesk;
  let client: Client;
  let remote: Browser;
  let page: Page;
  const sb = uniqueName('screen');
  const call = async (name: string, args: Record<string, unknown>) =>
    (await client.callTool({ name, arguments: { sandbox: sb, ...args } })) as ToolResult;
  const data = (r: ToolResult) => {
    if (r.isError) throw new Error(r.content[0]!.text);
    return r.structuredContent!;
  };

  beforeAll(async () => {
    t = tempDesk();
    await t.desk.createSandbox({ name: sb, backend: 'docker', image: 'sandbox-desk/desktop:latest' });
    await t.desk.desktop.start(sb, { geometry: '1280x800' });
    client = new Client({ name: 'sandbox-desk-screen-test', version: '1.0.0' });
    const env = { ...(process.env as Record<string, string>), SANDBOX_DESK_HOME: t.dataDir };
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env, stderr: 'pipe' }));
    remote = await chromium.connectOverCDP((await t.desk.desktop.browserEndpoint(sb)).httpUrl);
    page = await remote.contexts()[0]!.newPage();
  }, 180_000);

  afterAll(async () => {
    await remote?.close().catch(() => undefined);
    await client?.close();
    await t?.dispose();
  });

  it('wait_until_stable returns after the page finished loading, with the frame it ended on', async () => {
    // A page that paints for ~1.5 s after load, then stops.
    const loading = page.setContent(`<body style="margin:0"><div id=bar style="height:40px;background:#08f;width:0"></div><script>
      let w = 0; const t = setInterval(() => { w += 40; bar.style.width = w + 'px'; if (w >= 1200) { clearInterval(t); document.title = 'done'; } }, 50);
    </script></body>`);
    await page.bringToFront();
    await loading;
    const r = data(await call('wait_until_stable', { quietMs: 500, timeoutMs: 20_000 }));
    expect(r.stable).toBe(true);
    expect(await page.title()).toBe('done');
    expect(r).toMatchObject({ width: 1280, height: 800, scale: 1, format: 'png' });
  });

  it('clicks a button by the coordinates of a scaled frame, and the page says it was clicked there', async () => {
    await page.setContent(`<body style="margin:0"><button id=b style="position:absolute;left:301px;top:203px;width:121px;height:61px">press</button><script>
      window.hits = []; b.addEventListener('click', (e) => hits.push({ x: e.clientX, y: e.clientY }));
    </script></body>`);
    await page.bringToFront();
    data(await call('wait_until_stable', { quietMs: 300, timeoutMs: 10_000 }));
    const shot = await call('screenshot', { maxWidth: 1024, maxHeight: 768 });
    const frame = data(shot);
    expect(frame).toMatchObject({ width: 1024, height: 640, scale: 0.8, screenWidth: 1280, screenHeight: 800 });
    expect(decodePngSize(Buffer.from(shot.content[0]!.data!, 'base64'))).toEqual({ width: 1024, height: 640 });
    // Where the page is on the screen: the window's position plus its frame and toolbars.
    const shift = await page.evaluate(() => ({
      x: window.screenX + (window.outerWidth - window.innerWidth),
      y: window.screenY + (window.outerHeight - window.innerHeight),
    }));
    const target = { x: shift.x + 301 + 60, y: shift.y + 203 + 30 };
    // What an agent reading the scaled image would pick: the frame pixel showing that screen pixel.
    const fx = Math.floor(((target.x + 0.5) * 1024) / 1280);
    const fy = Math.floor(((target.y + 0.5) * 640) / 800);
    const r = data(await call('click', { x: fx, y: fy, frameId: frame.frameId }));
    const expected = { x: Math.floor(((fx + 0.5) * 1280) / 1024), y: Math.floor(((fy + 0.5) * 800) / 640) };
    expect(r).toMatchObject({ via: 'rfb', frameId: frame.frameId, pointer: expected, pointerInFrame: { x: fx, y: fy } });
    await expect
      .poll(() => page.evaluate(() => (window as unknown as { hits: unknown[] }).hits), { timeout: 5000 })
      .toEqual([{ x: expected.x - shift.x, y: expected.y - shift.y }]);
    // The app (another process on the same data directory) can show that frame with the click point.
    await expect
      .poll(() => t.desk.desktop.lastAction(sb), { timeout: 5000 })
      .toMatchObject({
        kind: 'click',
        target: expected,
        screen: { width: 1280, height: 800 },
        frame: { frameId: frame.frameId, width: 1024, height: 640, image: expect.stringMatching(/^data:image\/png;base64,iVBOR/) },
      });
  });

  it('refuses a click on a frame taken before a resize (stale_frame, with the new geometry); a new frame works', async () => {
    const frame = data(await call('screenshot', { maxWidth: 640 }));
    await t.desk.desktop.resize(sb, 1024, 768);
    const refused = await call('click', { x: 10, y: 10, frameId: frame.frameId });
    expect(refused.isError).toBe(true);
    expect(JSON.parse(refused.content[0]!.text!).error).toMatchObject({
      code: 'stale_frame',
      details: { current: { width: 1024, height: 768 } },
    });
    const next = data(await call('screenshot', {}));
    expect(next).toMatchObject({ width: 1024, height: 768, firstSinceChange: true });
    expect(data(await call('move', { x: 1023, y: 767, frameId: next.frameId })).pointer).toEqual({ x: 1023, y: 767 });
    // Outside the frame, a frame that never existed, 1 MB of text, a key that is no key.
    expect(JSON.parse((await call('move', { x: 1024, y: 0, frameId: next.frameId })).content[0]!.text!).error.message).toMatch(/1024x768/);
    expect(JSON.parse((await call('move', { x: 1, y: 1, frameId: 'nope' })).content[0]!.text!).error.message).toMatch(/never taken/);
    expect((await call('key', { keys: 'ctrl+banana' })).isError).toBe(true);
    // "At most" above the screen is the screen at its own size, scale 1 (issue 36), never an error.
    expect(data(await call('screenshot', { maxWidth: 2000 }))).toMatchObject({ width: 1024, height: 768, scale: 1, screenWidth: 1024 });
  });

  it('a frame taken by one CLI process is stale in a third after a second resized the screen there and back', async () => {
    const env = { ...process.env, SANDBOX_DESK_HOME: t.dataDir };
    const cli = async (...args: string[]) => {
      const r = await execFileP(process.execPath, [BIN, ...args], { env }).catch((e: { stdout: string; stderr: string }) => e);
      return { stdout: r.stdout, stderr: r.stderr };
    };
    const out = join(t.dataDir, 'frame.png');
    const shot = JSON.parse((await cli('desktop', 'screenshot', sb, '--max-width', '512', '--out', out, '--json')).stdout) as {
      frameId: string;
      width: number;
    };
    const size = data(await call('screenshot', {})) as { width: number; height: number };
    // Another process: the test's own core, with a connection of its own; there and back again.
    await t.desk.desktop.resize(sb, 800, 600);
    await t.desk.desktop.resize(sb, size.width, size.height);
    const refused = await cli('desktop', 'click', sb, '10', '10', '--frame', shot.frameId, '--json');
    // --json puts the error on stdout.
    expect(JSON.parse(refused.stdout).error).toMatchObject({
      code: 'stale_frame',
      details: { current: { width: size.width, height: size.height } },
    });
    // A frame taken after it works from yet another process.
    const fresh = JSON.parse((await cli('desktop', 'screenshot', sb, '--max-width', '512', '--out', out, '--json')).stdout) as {
      frameId: string;
    };
    const ok = JSON.parse((await cli('desktop', 'move', sb, '256', '10', '--frame', fresh.frameId, '--json')).stdout) as {
      pointer: { x: number };
    };
    expect(ok.pointer.x).toBe(Math.floor((256.5 * size.width) / 512));
    // The CLI too: at most more than the screen is the whole screen, scale 1 (issue 36).
    const whole = JSON.parse((await cli('desktop', 'screenshot', sb, '--max-width', '4096', '--out', out, '--json')).stdout) as object;
    expect(whole).toMatchObject({ width: size.width, height: size.height, scale: 1 });
  });

  it('presses a key outside the keysym table with xdotool (the result says so); a name X does not know is refused', async () => {
    await page.setContent('<input id=q autofocus><script>window.keys=[];addEventListener("keydown",e=>keys.push(e.code))</script>');
    await page.bringToFront();
    await page.focus('#q');
    const r = data(await call('key', { keys: 'KP_Multiply' }));
    expect(r).toMatchObject({ via: 'xdotool', note: expect.stringMatching(/KP_Multiply not in the RFB key table/) });
    await expect
      .poll(() => page.evaluate(() => (window as unknown as { keys: string[] }).keys), { timeout: 10_000 })
      .toContain('NumpadMultiply');
    const refused = await call('key', { keys: 'ctrl+Banana_Split' });
    expect(JSON.parse(refused.content[0]!.text!).error).toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(/"Banana_Split".*not a key name X knows/),
    });
  });

  it('Xvnc killed under the live connection: after a restart the next frame says it is new, older frames are stale', async () => {
    const before = data(await call('screenshot', {}));
    // This sandbox's own Xvnc, and nothing else: pkill inside the container.
    await t.desk.exec({ sandbox: sb, user: 'root', command: 'pkill -x Xvnc; pkill -f Xtigervnc; sleep 1; true' });
    await t.desk.desktop.stop(sb);
    await t.desk.desktop.start(sb, { geometry: '1280x800' });
    const refused = await call('move', { x: 1, y: 1, frameId: before.frameId });
    expect(JSON.parse(refused.content[0]!.text!).error).toMatchObject({
      code: 'stale_frame',
      details: { current: { width: 1280, height: 800 } },
    });
    expect(data(await call('screenshot', {}))).toMatchObject({ width: 1280, height: 800, firstSinceChange: true });
    remote = await chromium.connectOverCDP((await t.desk.desktop.browserEndpoint(sb)).httpUrl);
    page = await remote.contexts()[0]!.newPage();
  });

  it('JPEG and WebP frames when asked', async () => {
    for (const [format, mime] of [
      ['jpeg', 'image/jpeg'],
      ['webp', 'image/webp'],
    ] as const) {
      const shot = await call('screenshot', { format, maxWidth: 1024, quality: 60 });
      expect(data(shot)).toMatchObject({ format, width: 1024, height: 640 });
      expect(shot.content[0]).toMatchObject({ type: 'image', mimeType: mime });
      expect(Buffer.from(shot.content[0]!.data!, 'base64').length).toBeGreaterThan(1000);
    }
  });

  it('types Unicode text over RFB into a focused input', async () => {
    await page.setContent('<input id=q autofocus style="font-size:40px;width:90%">');
    await page.bringToFront();
    await page.focus('#q');
    data(await call('type', { text: 'Héllo wörld € 1+1=2?' }));
    await expect.poll(() => page.inputValue('#q'), { timeout: 10_000 }).toBe('Héllo wörld € 1+1=2?');
  });
});
