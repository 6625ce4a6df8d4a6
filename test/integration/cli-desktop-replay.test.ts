/**
 * Issue 34's "Done means" for always-recording: with no window open, an agent drives a desktop through
 * the CLI alone (`exec`, `desktop click`, `desktop type`); then the app opened in browser mode (`serve`,
 * Debian's Chromium) finds on the Replay timeline the screen, the actions and the commands, and the
 * recorded screen at the end matches a live `desktop screenshot`. Then `kill -9` of the service while a
 * command runs: the next CLI call works (a new service re-adopts the sandbox and its desktop, recording
 * resumes), the cut-off command is reported interrupted with `cwdObserved: false`, its session keeps its
 * last observed cwd, and the replay marks the gap. Real parts: the built bin (`npm run build`), a real
 * Docker desktop sandbox, the service on its own data dir (SANDBOX_DESK_HOME), real Chromium.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReplayEvent, ReplayRecording } from '../../src/shared/replay-types.js';
import { connect, type ServiceClient } from '../../src/client/connect.js';
import { HEADLESS_CHROMIUM, uniqueName } from './helpers.js';

const BIN = resolve(import.meta.dirname, '../../bin/sandbox-desk.js');
/** The live screen and the recorded one may differ by a blinking caret: mean absolute difference per channel, of 255. */
const MEAN_DIFF_MAX = 1.5;
/** The panel's clock (top right of the 1024-wide screen) ticks between the two looks: not compared. */
const CLOCK = { left: 800, top: 0, width: 224, height: 28 };

/** Mean absolute difference per channel (0–255) of two images, `b` resized to `a`'s size, the clock masked. */
async function meanDifference(a: Buffer, b: Buffer): Promise<number> {
  const ra = await sharp(a).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const { width, height } = ra.info;
  const rb = await sharp(b).resize(width, height, { fit: 'fill' }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const sx = width / 1024;
  const sy = height / 768;
  let sum = 0;
  let n = 0;
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const inClock = x >= CLOCK.left * sx && y < (CLOCK.top + CLOCK.height) * sy;
      if (inClock) continue;
      const o = (y * width + x) * 3;
      for (let c = 0; c < 3; c++) sum += Math.abs(ra.data[o + c]! - rb.data[o + c]!);
      n += 3;
    }
  return sum / n;
}

async function until<T>(what: string, get: () => T | Promise<T>, ok: (v: T) => boolean, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await get();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting: ${what} (last: ${JSON.stringify(v)?.slice(0, 500)})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('a desktop driven only through the CLI is on the Replay timeline; kill -9 of the service leaves a marked gap', () => {
  const home = mkdtempSync(join(tmpdir(), 'sdesk-clirep-'));
  // No XDG_RUNTIME_DIR: the socket is in <home>/run/, so this file's service is its own.
  const env: NodeJS.ProcessEnv = { ...process.env, SANDBOX_DESK_HOME: home, XDG_RUNTIME_DIR: '' };
  delete env.SANDBOX_DESK_TEST_VERSION;
  const sb = uniqueName('clirep');
  const mark = uniqueName('MARK');
  const services = new Set<number>();
  let browser: Browser | undefined;
  let serve: ChildProcess | undefined;
  const cli = (...args: string[]) => {
    const r = spawnSync(process.execPath, [BIN, ...args], { env, encoding: 'utf8', timeout: 60_000 });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr, json: <T>() => JSON.parse(r.stdout) as T };
  };
  const ok = (...args: string[]) => {
    const r = cli(...args);
    expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    return r;
  };
  const servicePid = (): number => {
    const pid = (JSON.parse(readFileSync(join(home, 'service.lock'), 'utf8')) as { pid: number }).pid;
    services.add(pid);
    return pid;
  };
  // What the test looks at (not how it drives the desktop: that is the CLI's alone) goes through the
  // SDK's client, connected only once the CLI has started the service: polling by spawning the CLI is slow.
  let sdk: ServiceClient | undefined;
  const client = async (): Promise<ServiceClient> => (sdk ??= await connect({ env, start: false }));
  const events = async (): Promise<ReplayEvent[]> => (await (await client()).call('replayEvents', { sandbox: sb })).events;
  const recording = async (): Promise<ReplayRecording | undefined> =>
    (await (await client()).call('replayList', { sandbox: sb })).recordings.find((r) => r.sandbox === sb);

  /** `serve` (browser mode, a client of the service) and the app in Chromium on its Replay view of the sandbox. */
  async function openReplay(): Promise<Page> {
    serve?.kill('SIGKILL');
    const child = spawn(process.execPath, [BIN, 'serve', '--json', '--port', '0'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    serve = child;
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    const line = await until(
      'serve to print its URL',
      () => out,
      (o) => o.includes('\n'),
    );
    browser ??= await chromium.launch(HEADLESS_CHROMIUM);
    const page = await browser.newPage({ viewport: { width: 1500, height: 1150 } });
    await page.goto((JSON.parse(line) as { url: string }).url);
    await page.getByTestId(`sandbox-row-${sb}`).click();
    await page.getByTestId('view-replay').click();
    await page.getByTestId('replay-view').waitFor({ timeout: 20_000 });
    return page;
  }
  const rowTexts = (p: Page) => p.getByTestId('replay-event-summary').allTextContents();

  beforeAll(() => {
    ok('sandbox', 'create', sb, '--backend', 'docker', '--image', 'sandbox-desk/desktop:latest');
    ok('desktop', 'start', sb, '--geometry', '1024x768');
  }, 120_000);
  afterAll(async () => {
    await sdk?.close();
    await browser?.close().catch(() => undefined);
    serve?.kill('SIGKILL');
    cli('sandbox', 'rm', sb, '--force');
    cli('service', 'stop', '--force');
    for (const pid of services) if (alive(pid)) process.kill(pid, 'SIGKILL');
    rmSync(home, { recursive: true, force: true });
  }, 60_000);

  it('exec, desktop click and desktop type through the CLI: the Replay view shows the screen, the actions and the commands, its last frame the live screen', async () => {
    const cmd = `echo ${mark} > /tmp/${mark}.txt && cd /tmp`;
    expect(ok('exec', sb, '--session', 'agent', '--', cmd).stdout).toBe('');
    // Chromium's address bar (the desktop opens Chromium): the click focuses it, the text goes into it.
    ok('desktop', 'click', sb, '220', '112');
    ok('desktop', 'type', sb, mark);
    ok('exec', sb, '--session', 'agent', '--', `cat ${mark}.txt`);
    // Let the typed text reach the screen, then take the live look.
    await new Promise((r) => setTimeout(r, 300));
    const livePng = join(home, 'live.png');
    const live = ok('desktop', 'screenshot', sb, '--out', livePng, '--json').json<{ takenAt: string }>();
    // The last event: after the live look, so its frame is the screen the live look saw.
    ok('exec', sb, '--session', 'agent', '--', 'true');
    // The recorder writes asynchronously: wait until the recording reaches the live look.
    await until(
      'the screen recording to reach the live screenshot',
      recording,
      (r) => r?.screen != null && Date.parse(r.screen.endedAt) >= Date.parse(live.takenAt),
    );
    // The API's timeline has them all (the commands with their cwd, the actions with their point).
    const timeline = await events();
    expect(timeline).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'command', summary: cmd, session: 'agent', cwdObserved: '/tmp', exitCode: 0 }),
        expect.objectContaining({ kind: 'action', summary: 'click (220, 112)', point: { x: 220, y: 112 } }),
        expect.objectContaining({ kind: 'action', tool: 'type' }),
        expect.objectContaining({ kind: 'command', summary: `cat ${mark}.txt`, cwdUsed: '/tmp', exitCode: 0 }),
      ]),
    );

    const p = await openReplay();
    // The screen: recorded, and recording now.
    await p.getByTestId('replay-rec-screen').waitFor({ timeout: 20_000 });
    const rows = p.getByTestId('replay-event');
    await until(
      'the timeline to list every event',
      () => rows.count(),
      (n) => n >= timeline.length,
    );
    const texts = await rowTexts(p);
    expect(texts).toEqual(expect.arrayContaining([cmd, 'click (220, 112)', 'type', `cat ${mark}.txt`, 'true']));
    // Jump to the last event: the frame shown is the screen then — the live screenshot's.
    const last = texts.lastIndexOf('true');
    await rows.nth(last).getByRole('button').click();
    const img = p.getByTestId('replay-frame');
    await until(
      'the frame of the last event',
      () => img.getAttribute('data-at'),
      (at) => at !== null && Date.parse(at) >= Date.parse(live.takenAt) - 2000,
    );
    const src = (await img.getAttribute('src'))!;
    const diff = await meanDifference(readFileSync(livePng), Buffer.from(src.slice(src.indexOf(',') + 1), 'base64'));
    console.log(`cli-desktop-replay: mean difference of the replayed last frame vs the live screenshot: ${diff.toFixed(3)} of 255`);
    expect(diff).toBeLessThan(MEAN_DIFF_MAX);
    await p.close();
  });

  it('kill -9 of the service mid-command: the next CLI call works, the command is reported interrupted, the session keeps its cwd, recording resumes with the gap marked', async () => {
    ok('exec', sb, '--session', 'k9', '--', 'cd /tmp');
    const before = servicePid();
    const running = join(home, 'recordings', sb, 'running');
    const cutOff = spawn(process.execPath, [BIN, 'exec', sb, '--session', 'k9', '--json', '--', 'cd /var && sleep 30'], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let cutOut = '';
    cutOff.stdout.setEncoding('utf8').on('data', (d: string) => (cutOut += d));
    const cutExit = new Promise<number | null>((r) => cutOff.once('exit', r));
    // The service has the command (it noted it as running): now kill it.
    await until(
      'the command to run in the service',
      () => (existsSync(running) ? readdirSync(running).length : 0),
      (n) => n === 1,
    );
    await new Promise((r) => setTimeout(r, 300)); // `cd /var` has run in the shell; the sleep has not ended
    process.kill(before, 'SIGKILL');
    await until(
      'the killed service to be gone',
      () => alive(before),
      (a) => !a,
    );

    // The client whose command was cut off says so: interrupted, its cwd not observed.
    expect(await cutExit).toBe(125);
    expect(JSON.parse(cutOut)).toMatchObject({
      error: { code: 'service_unavailable', details: { interrupted: true, cwdObserved: false, session: 'k9' } },
    });
    // The next CLI call works: a new service, the sandbox re-adopted, the session's record its last observed cwd.
    const t0 = Date.now();
    expect(ok('exec', sb, '--session', 'k9', '--', 'pwd').stdout).toBe('/tmp\n');
    console.log(`cli-desktop-replay: first CLI call after kill -9 took ${Date.now() - t0} ms`);
    const after = servicePid();
    expect(after).not.toBe(before);

    // The recording resumed (nobody asked for the desktop's status) and the gap is a `recording` event.
    const gap = await until(
      'the gap to be marked',
      async () => (await events()).find((e) => e.kind === 'recording' && e.summary.includes(`(pid ${before}) ended without stopping`)),
      (e) => e !== undefined,
    );
    const resumedAt = Date.parse(gap!.at) + (gap!.durationMs ?? 0);
    await until(
      'the resumed recording to be written',
      recording,
      (r) => r?.recording === true && Date.parse(r.screen?.endedAt ?? '0') >= resumedAt,
    );
    expect(Date.parse(gap!.at)).toBeLessThanOrEqual(Date.now());
    // The cut-off command is on the timeline as interrupted: no exit code, its cwd not observed.
    expect(await events()).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          kind: 'command',
          summary: 'cd /var && sleep 30',
          session: 'k9',
          interrupted: true,
          exitCode: null,
          cwdObserved: null,
        }),
      ]),
    );
    expect(existsSync(running) ? readdirSync(running) : []).toEqual([]);

    // The Replay view (through a new serve: the old one was the killed service's client) marks the gap.
    const p = await openReplay();
    await until(
      'the gap on the timeline',
      () => rowTexts(p),
      (t) => t.some((s) => s === gap!.summary),
    );
    await p.getByTestId('replay-rec-screen').waitFor({ timeout: 20_000 });
    await p.close();
  });
});
