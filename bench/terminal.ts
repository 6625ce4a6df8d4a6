/**
 * Keystroke-to-echo in the terminal, through the whole path a user's keystroke takes: xterm.js in
 * Chromium → AttachAddon → ticketed loopback WebSocket → the core → node-pty → `docker exec -it` →
 * bash's echo → back the same way → parsed by xterm.js. Baseline, in the same run: a raw
 * `docker exec -it` PTY driven from Node (no browser, no WebSocket, no core).
 */
import { join } from 'node:path';
import { spawn as spawnPty } from 'node-pty';
import { chromium } from 'playwright-core';
import { LocalServer } from '../src/api/local-server.js';
import { projectRoot } from '../src/platform/project-root.js';
import { benchPage, dockerSandbox, metric, percentile, withTempDesk, type Metric } from './harness.js';

export const name = 'terminal';

const RUNS = 60;
const GOAL_ADDED_MS = 10;

/** xterm.js and the attach addon, straight from node_modules, for the measuring page. */
const XTERM_FILES: Record<string, string> = {
  '/xterm.mjs': join(projectRoot(), 'node_modules', '@xterm', 'xterm', 'lib', 'xterm.mjs'),
  '/xterm.css': join(projectRoot(), 'node_modules', '@xterm', 'xterm', 'css', 'xterm.css'),
  '/attach.mjs': join(projectRoot(), 'node_modules', '@xterm', 'addon-attach', 'lib', 'addon-attach.mjs'),
};

/** In the page: xterm.js + AttachAddon on the terminal's WebSocket; time each `x` until its echo is parsed. */
const MEASURE_IN_PAGE = `
import { Terminal } from '/xterm.mjs';
import { AttachAddon } from '/attach.mjs';
window.sdeskMeasure = async (url, runs) => {
  const term = new Terminal({ cols: 100, rows: 30 });
  term.open(document.getElementById('t'));
  const ws = new WebSocket(url);
  ws.binaryType = 'arraybuffer';
  await new Promise((r) => ws.addEventListener('open', r, { once: true }));
  term.loadAddon(new AttachAddon(ws));
  const line = () => term.buffer.active.getLine(term.buffer.active.cursorY + term.buffer.active.baseY)?.translateToString(true) ?? '';
  for (let i = 0; i < 200 && !/[$#] ?$/.test(line()); i++) await new Promise((r) => setTimeout(r, 50));
  const samples = [];
  for (let i = 0; i < runs + 5; i++) {
    const before = line();
    const t0 = performance.now();
    await new Promise((resolve) => {
      const sub = term.onWriteParsed(() => { if (line() !== before) { sub.dispose(); resolve(); } });
      term.input('x', true);
    });
    if (i >= 5) samples.push(performance.now() - t0);
  }
  ws.close();
  return samples.sort((a, b) => a - b);
};
`;

/** The raw PTY: type a character, wait for its echo; repeat. */
async function rawEcho(containerId: string): Promise<number[]> {
  const pty = spawnPty('docker', ['exec', '-it', '-u', 'agent', containerId, 'bash', '--norc', '--noprofile'], {
    cols: 100,
    rows: 30,
    name: 'xterm-256color',
  });
  let out = '';
  pty.onData((d) => (out += d));
  const waitFor = (pred: () => boolean, ms = 10_000) =>
    new Promise<void>((resolve, reject) => {
      const t0 = Date.now();
      const tick = () => (pred() ? resolve() : Date.now() - t0 > ms ? reject(new Error('no echo')) : setImmediate(tick));
      tick();
    });
  await waitFor(() => /[$#] $/.test(out));
  const samples: number[] = [];
  for (let i = 0; i < RUNS + 5; i++) {
    const before = out.length;
    const t0 = performance.now();
    pty.write('x');
    await waitFor(() => out.length > before && out.slice(before).includes('x'));
    if (i >= 5) samples.push(performance.now() - t0);
  }
  pty.kill();
  return samples.sort((a, b) => a - b);
}

export default async function run(): Promise<Metric[]> {
  return withTempDesk(async (desk) => {
    const { name: sb, containerId } = await dockerSandbox(desk);
    const raw = await rawEcho(containerId);

    const page$ = await benchPage(
      '<!doctype html><link rel=stylesheet href=/xterm.css><div id=t style="width:900px;height:500px"></div>',
      (path) => XTERM_FILES[path] ?? null,
    );
    const server = new LocalServer({ desk, extraOrigins: [page$.origin] });
    await server.listen();
    const browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--no-sandbox', '--headless', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
    try {
      const page = await browser.newPage();
      await page.goto(page$.origin);
      const grant = ((await server.call('terminalOpen', { sandbox: sb, session: 'bench', cols: 100, rows: 30 })) as { ok: { url: string } })
        .ok;
      // Plain JS in the page (not a transpiled function: the bundler would wrap named functions).
      await page.addScriptTag({ type: 'module', content: MEASURE_IN_PAGE });
      await page.waitForFunction(() => 'sdeskMeasure' in window);
      const ours = await page.evaluate(
        ([url, runs]) =>
          (window as unknown as { sdeskMeasure: (u: string, n: number) => Promise<number[]> }).sdeskMeasure(url as string, runs as number),
        [grant.url, RUNS] as const,
      );
      const p50 = percentile(ours, 50);
      const rawP50 = percentile(raw, 50);
      console.log(
        `added at p50: ${(p50 - rawP50).toFixed(2)} ms (goal ≤ ${GOAL_ADDED_MS} ms) — ${p50 - rawP50 <= GOAL_ADDED_MS ? 'MET' : 'NOT MET'}`,
      );
      return [
        metric('echo-p50-ms', 'ms', p50, rawP50),
        metric('echo-p95-ms', 'ms', percentile(ours, 95), percentile(raw, 95)),
        metric('added-p50-ms', 'ms', p50 - rawP50),
      ];
    } finally {
      await browser.close();
      await server.close();
      page$.close();
    }
  });
}
