/**
 * The bot desktop in a VM (debian-desktop): the first frame after `desktop start`, and a page load in
 * the VM's Chromium through `desktop browser`, against the host's own Chromium loading the same page from
 * a loopback server in the same run (the ratio is the VM's cost: under TCG, QEMU's software CPU). The
 * accel is printed beside each figure. Part of bench/vm.ts.
 */
import { chromium } from 'playwright-core';
import { RfbClient, transportFromStreams } from '../src/desktop/rfb/rfb-client.js';
import type { SandboxDesk } from '../src/api/sandbox-desk.js';
import { benchPage, median, metric, type Metric } from './harness.js';
import { HEADLESS_CHROMIUM } from '../test/integration/helpers.js';

const PAGE = '<title>bench page</title><body style="margin:0;background:#3a6"><h1>a local page</h1><p>served where the browser runs</p>';
const PORT = 8766;
const RUNS = 5;

export async function vmDesktopMetrics(desk: SandboxDesk): Promise<Metric[]> {
  const sb = 'bench-vm-desktop';
  await desk.createSandbox({
    name: sb,
    backend: 'qemu',
    image: 'debian-desktop',
    options: { accel: process.env.SDESK_BENCH_ACCEL ?? 'auto', bootTimeout: '1500' },
  });
  const accel = String((await desk.inspectSandbox(sb)).details?.accel ?? 'unknown');
  const note = `accel ${accel}`;
  try {
    // First frame: `desktop start` until the first full framebuffer update arrives over the screen stream.
    const t0 = performance.now();
    await desk.desktop.start(sb, { geometry: '1280x800' });
    const stream = await desk.desktop.openScreenStream(sb);
    const rfb = await RfbClient.connect(transportFromStreams(stream.stdout, stream.stdin, () => stream.kill()));
    await rfb.requestUpdate(false);
    const firstFrame = performance.now() - t0;
    rfb.close();
    stream.kill();

    // Chromium's start: until its DevTools answer through the bridge (over the VM's SSH streams).
    const t1 = performance.now();
    const ep = await desk.desktop.browserEndpoint(sb);
    const browserStart = performance.now() - t1;

    const serve = `mkdir -p /tmp/bench-page && printf '%s' '${PAGE}' > /tmp/bench-page/index.html && cd /tmp/bench-page && (setsid nohup python3 -m http.server ${PORT} --bind 127.0.0.1 </dev/null >/dev/null 2>&1 &) && for i in $(seq 1 60); do python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:${PORT}/")' 2>/dev/null && exit 0; sleep 1; done; exit 1`;
    const served = await desk.exec({ sandbox: sb, command: serve, timeoutSeconds: 300 });
    if (served.exitCode !== 0) throw new Error(`could not serve the page in the VM: ${served.stderr}`);

    const loads = async (goto: (u: string) => Promise<unknown>, url: string): Promise<number[]> => {
      await goto(url); // warm-up: the first navigation pays for a renderer's start
      const out: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const t = performance.now();
        await goto(`${url}?${i}`);
        out.push(performance.now() - t);
      }
      return out;
    };
    const remote = await chromium.connectOverCDP(ep.httpUrl, { timeout: 300_000 });
    let vm: number[];
    try {
      const page = await remote.contexts()[0]!.newPage();
      vm = await loads((u) => page.goto(u, { waitUntil: 'load', timeout: 300_000 }), `http://127.0.0.1:${PORT}/`);
      await page.close();
    } finally {
      await remote.close();
    }

    const host = await chromium.launch(HEADLESS_CHROMIUM);
    const server = await benchPage(PAGE, () => null);
    let local: number[];
    try {
      const page = await host.newPage();
      local = await loads((u) => page.goto(u, { waitUntil: 'load' }), `${server.origin}/`);
    } finally {
      server.close();
      await host.close();
    }
    console.log(
      `VM desktop under ${accel.toUpperCase()}: first frame ${firstFrame.toFixed(0)} ms, Chromium's DevTools after ${browserStart.toFixed(0)} ms`,
    );
    return [
      { ...metric('vm-desktop-first-frame-ms', 'ms', firstFrame), note },
      { ...metric('vm-chromium-start-ms', 'ms', browserStart), note },
      {
        ...metric('vm-chromium-page-load-ms', 'ms', median([...vm].sort((a, b) => a - b)), median([...local].sort((a, b) => a - b))),
        note: `${note}; baseline: the host's Chromium, same page`,
      },
    ];
  } finally {
    await desk.removeSandbox(sb, { force: true }).catch(() => undefined);
  }
}
