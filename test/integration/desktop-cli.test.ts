/** `sandbox-desk desktop …` as a user runs it: separate processes, real Docker, real Xvnc. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium } from 'playwright-core';
import { decodePngSize } from '../../src/desktop/png-encode.js';
import { uniqueName } from './helpers.js';

const BIN = resolve(import.meta.dirname, '../../bin/sandbox-desk.js');

describe('sandbox-desk desktop CLI', () => {
  let home: string;
  const name = uniqueName('dcli');
  const env = () => ({ ...process.env, SANDBOX_DESK_HOME: home });
  const cli = (...args: string[]) => {
    const r = spawnSync(process.execPath, [BIN, ...args], { env: env(), encoding: 'utf8', timeout: 120_000 });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr, json: () => JSON.parse(r.stdout) as Record<string, unknown> };
  };
  /** Starts a serving command and resolves with its first stdout line; the caller kills it. */
  const serve = (...args: string[]): Promise<{ child: ChildProcess; line: string }> =>
    new Promise((resolveLine, reject) => {
      const child = spawn(process.execPath, [BIN, ...args], { env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
      let buf = '';
      let err = '';
      child.stderr.on('data', (c: Buffer) => (err += c.toString()));
      child.stdout.on('data', (c: Buffer) => {
        buf += c.toString();
        if (buf.includes('\n')) resolveLine({ child, line: buf.split('\n')[0]! });
      });
      child.on('exit', (code) => reject(new Error(`exited ${code}: ${err}`)));
    });

  beforeAll(() => {
    home = mkdtempSync(join(tmpdir(), 'sdesk-dcli-'));
    expect(cli('sandbox', 'create', name, '--backend', 'docker', '--image', 'sandbox-desk/desktop:latest').code).toBe(0);
  }, 120_000);
  afterAll(() => {
    cli('sandbox', 'rm', name, '--force');
    rmSync(home, { recursive: true, force: true });
  });

  it('start, status --json, screenshot --out, stop', () => {
    const started = cli('desktop', 'start', name, '--geometry', '1024x768', '--json');
    expect(started.code, started.stderr).toBe(0);
    const s = cli('desktop', 'status', name, '--json').json();
    expect(s).toMatchObject({
      running: true,
      placement: 'sandbox',
      display: ':20',
      geometry: '1024x768',
      leaseHolder: 'agent',
      missing: [],
      reason: null,
    });
    const out = join(home, 'shot.png');
    expect(cli('desktop', 'screenshot', name, '--out', out).code).toBe(0);
    expect(decodePngSize(readFileSync(out))).toEqual({ width: 1024, height: 768 });
    expect(cli('desktop', 'status', name).stdout).toMatch(/running \(placement sandbox\)/);
  });

  it('screenshot --max-width --json gives the frame; click/move --frame --json give the measured pointer', () => {
    const out = join(home, 'small.png');
    const shot = cli('desktop', 'screenshot', name, '--max-width', '512', '--out', out, '--json');
    expect(shot.code, shot.stderr).toBe(0);
    const frame = shot.json();
    expect(frame).toMatchObject({ file: out, width: 512, height: 384, scale: 0.5, screenWidth: 1024, screenHeight: 768, format: 'png' });
    expect(decodePngSize(readFileSync(out))).toEqual({ width: 512, height: 384 });
    // Another CLI process, its own live connection: the frame id still says which desktop and sizes it had.
    expect(cli('desktop', 'move', name, '10', '10', '--frame', String(frame.frameId), '--json').json()).toMatchObject({
      pointer: { x: 21, y: 21 },
      pointerInFrame: { x: 10, y: 10 },
    });
    expect(cli('desktop', 'move', name, '1', '1', '--frame', 'made-up', '--json').json()).toMatchObject({
      error: { code: 'invalid_input' },
    });
    expect(cli('desktop', 'move', name, '100', '50', '--json').json()).toMatchObject({ pointer: { x: 100, y: 50 }, via: 'rfb' });
    expect(cli('desktop', 'click', name, '1024', '0', '--json').json()).toMatchObject({
      error: { code: 'invalid_input', message: expect.stringMatching(/1024x768/) },
    });
    expect(cli('desktop', 'key', name, 'ctrl+banana', '--json').code).toBe(125);
    expect(cli('desktop', 'screenshot', name, '--max-width', '0', '--json').json()).toMatchObject({ error: { code: 'invalid_input' } });
  });

  it('browser --json prints a forwarded CDP endpoint that Playwright can use while it runs', async () => {
    const { child, line } = await serve('desktop', 'browser', name, '--json');
    try {
      const ep = JSON.parse(line) as { httpUrl: string; webSocketDebuggerUrl: string };
      expect(ep.webSocketDebuggerUrl).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/devtools\/browser\//);
      const b = await chromium.connectOverCDP(ep.httpUrl);
      expect(b.contexts().length).toBeGreaterThan(0);
      await b.close();
    } finally {
      child.kill('SIGINT');
    }
  });

  it('view prints a loopback URL with a token that opens the viewer', async () => {
    const { child, line } = await serve('desktop', 'view', name, '--json');
    try {
      const { url } = JSON.parse(line) as { url: string };
      expect(url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:\\d+/desktop/${name}\\?token=[0-9a-f]{48}$`));
      expect((await fetch(url)).status).toBe(200);
      expect((await fetch(url.replace(/token=.*/, 'token=wrong'))).status).toBe(401);
    } finally {
      child.kill('SIGINT');
    }
  });

  it('errors exit 125: bad placement, bad geometry, desktop not running', () => {
    expect(cli('desktop', 'status', name, '--placement', 'moon', '--json').json()).toMatchObject({ error: { code: 'invalid_input' } });
    expect(cli('desktop', 'start', name, '--geometry', 'big', '--json').code).toBe(125);
    expect(cli('desktop', 'stop', name).code).toBe(0);
    const shot = cli('desktop', 'screenshot', name, '--out', join(home, 'x.png'), '--json');
    expect(shot.code).toBe(125);
    expect(shot.json()).toMatchObject({ error: { code: 'desktop_not_running' } });
  });
});
