/**
 * The bot desktop: how fast the first frame arrives after `desktop start`, and how well the screen
 * streams through our path (a relay started by docker exec, its bytes through the sandbox's inbox socket) against a direct TCP connection to the same
 * Xvnc (the websockify/noVNC-style baseline: socat on a TCP port of the container, reached over the
 * Docker bridge) — measured in the same run, on the same animating screen.
 *
 * Both paths use the same RFB client and encodings (Raw + CopyRect, continuous updates), so the
 * difference is the transport alone. fps counts FramebufferUpdates while a Chromium page animates
 * full-window.
 */
import { chromium, type Page } from 'playwright-core';
import { WebSocket, WebSocketServer } from 'ws';
import { join, normalize } from 'node:path';
import { LocalServer } from '../src/api/local-server.js';
import { projectRoot } from '../src/platform/project-root.js';
import { CONTINUOUS_ENCODINGS, RfbClient, transportFromStreams, type ByteTransport } from '../src/desktop/rfb/rfb-client.js';
import { connect } from 'node:net';
import { benchPage, docker, measure, median, metric, uniqueName, withTempDesk, type Metric } from './harness.js';
import type { SandboxDesk } from '../src/api/sandbox-desk.js';

export const name = 'desktop';

const IMAGE = 'sandbox-desk/desktop:latest';
const WINDOW_S = 4;
/**
 * Each of the five noVNC runs counts frames over this long. At 4 s a run counted ~80 frames a side,
 * and the two sides of one run — the same screen, at the same moment — differed by up to ±15 % from
 * counting alone (ten runs in one session: 0.88–1.18, mean 1.06): the per-run goal then measured the
 * sampling, not the path. A run is now two windows of 12 s (one per order of the viewers in the page,
 * ~480 frames a side in all), which narrows that about 2.4×.
 */
const NOVNC_WINDOW_S = 12;

const ANIMATION = `<title>anim</title><style>html,body{margin:0;height:100%;overflow:hidden}</style>
<canvas id=c></canvas><script>
const c = document.getElementById('c'), g = c.getContext('2d');
function frame(t) {
  c.width = innerWidth; c.height = innerHeight;
  g.fillStyle = 'hsl(' + (t / 5 % 360) + ',70%,50%)'; g.fillRect(0, 0, c.width, c.height);
  for (let i = 0; i < 40; i++) { g.fillStyle = 'hsl(' + (i * 9 + t / 3) % 360 + ',80%,60%)';
    g.fillRect((Math.sin(t / 400 + i) + 1) * c.width / 2.2, (Math.cos(t / 300 + i * 2) + 1) * c.height / 2.2, 80, 60); }
  requestAnimationFrame(frame);
}
requestAnimationFrame(frame);
</script>`;

async function firstFrameMs(desk: SandboxDesk, sandbox: string): Promise<number> {
  const t0 = performance.now();
  await desk.desktop.start(sandbox, { geometry: '1280x800' });
  const stream = await desk.desktop.openScreenStream(sandbox);
  const rfb = await RfbClient.connect(transportFromStreams(stream.stdout, stream.stdin, () => stream.kill()));
  await rfb.requestUpdate(false);
  const ms = performance.now() - t0;
  rfb.close();
  stream.kill();
  return ms;
}

/**
 * Updates per second and bytes per update with continuous updates on (as noVNC runs against
 * TigerVNC): the server pushes frames as the screen changes and paces them with fences, so the
 * figure measures what the transport sustains, not one round trip per frame.
 */
async function streamRate(transport: ByteTransport): Promise<{ fps: number; bytesPerFrame: number }> {
  const rfb = await RfbClient.connect(transport, { encodings: CONTINUOUS_ENCODINGS });
  await rfb.requestUpdate(false);
  await rfb.enableContinuousUpdates();
  await new Promise((r) => setTimeout(r, 500)); // settle into the steady state
  const start = rfb.stats;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
  const seconds = (performance.now() - t0) / 1000;
  const end = rfb.stats;
  rfb.close();
  const frames = end.updates - start.updates;
  return { fps: frames / seconds, bytesPerFrame: (end.bytes - start.bytes) / Math.max(1, frames) };
}

/**
 * The same measurement in the viewer people use: noVNC in headless Chromium, with its own encoding
 * choices (Tight, JPEG quality 6, continuous updates), on WebSocket URLs. Frames are counted as
 * completed FramebufferUpdates; bytes as WebSocket payload received.
 *
 * All URLs are connected at once, in one page, and counted over the same window after the same
 * warm-up: our path and the direct one see the same screen, the same machine load and the same
 * viewer at the same moment. Measured one after the other (as before), a loaded 2-core machine's
 * swings between the two windows decided the ratio (0.42–1.15 on one machine in one evening).
 */
async function novncRates(page: Page, urls: string[]): Promise<{ fps: number; bytesPerFrame: number }[]> {
  return page.evaluate(
    async ({ urls, windowS }) => {
      type Counter = { frames: number; bytes: number };
      const w = window as unknown as { __patched?: boolean };
      // URLs served to the page, not modules of this project: string-typed so tsc does not resolve them.
      const websockJs: string = '/novnc/core/websock.js';
      const rfbJs: string = '/novnc/core/rfb.js';
      // noVNC's private hooks, typed only as far as this patch uses them: each connection counts into
      // the counter hung on its own Websock / RFB object.
      type WebsockClass = { prototype: { _recvMessage: (this: { __counter?: Counter }, e: MessageEvent) => unknown } };
      type RfbInstance = {
        _sock: { __counter?: Counter };
        __counter?: Counter;
        addEventListener(type: string, listener: () => void): void;
        disconnect(): void;
      };
      type RfbClass = {
        new (target: HTMLElement, url: string, options: { shared: boolean }): RfbInstance;
        prototype: { _framebufferUpdate: (this: { __counter?: Counter }) => boolean };
      };
      const { default: Websock } = (await import(websockJs)) as { default: WebsockClass };
      const { default: RFB } = (await import(rfbJs)) as { default: RfbClass };
      if (!w.__patched) {
        const recv = Websock.prototype._recvMessage;
        Websock.prototype._recvMessage = function (e: MessageEvent) {
          if (this.__counter) this.__counter.bytes += (e.data as ArrayBuffer).byteLength ?? 0;
          return recv.call(this, e);
        };
        const fbu = RFB.prototype._framebufferUpdate;
        RFB.prototype._framebufferUpdate = function () {
          const done = fbu.call(this);
          if (done && this.__counter) this.__counter.frames++;
          return done;
        };
        w.__patched = true;
      }
      const views = await Promise.all(
        urls.map(async (url) => {
          const target = document.createElement('div');
          target.style.cssText = 'width:1280px;height:800px';
          document.body.appendChild(target);
          const rfb = new RFB(target, url, { shared: true });
          const counter: Counter = { frames: 0, bytes: 0 };
          rfb.__counter = counter;
          rfb._sock.__counter = counter;
          await new Promise<void>((resolve, reject) => {
            rfb.addEventListener('connect', () => resolve());
            rfb.addEventListener('disconnect', () => reject(new Error('noVNC disconnected')));
            setTimeout(() => reject(new Error('noVNC did not connect within 15 s')), 15_000);
          });
          return { rfb, target, counter };
        }),
      );
      // Warm-up: every connection into its steady state before the window opens.
      await new Promise((r) => setTimeout(r, 1500));
      const start = views.map((v) => ({ ...v.counter }));
      const t0 = performance.now();
      await new Promise((r) => setTimeout(r, windowS * 1000));
      const seconds = (performance.now() - t0) / 1000;
      const out = views.map((v, i) => {
        const frames = v.counter.frames - start[i]!.frames;
        return { fps: frames / seconds, bytesPerFrame: (v.counter.bytes - start[i]!.bytes) / Math.max(1, frames) };
      });
      for (const v of views) {
        v.rfb.disconnect();
        v.target.remove();
      }
      return out;
    },
    { urls, windowS: NOVNC_WINDOW_S },
  );
}

/** A websockify-style proxy: WebSocket on this machine's loopback ↔ TCP to the container. */
async function websockify(host: string, port: number): Promise<{ url: string; close: () => void }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
  await new Promise((r) => wss.once('listening', r));
  wss.on('connection', (ws) => {
    const tcp = connect({ host, port, noDelay: true });
    tcp.on('data', (d) => ws.send(d));
    ws.on('message', (d: Buffer) => tcp.write(d));
    tcp.on('close', () => ws.close());
    ws.on('close', () => tcp.destroy());
  });
  const addr = wss.address() as { port: number };
  return { url: `ws://127.0.0.1:${addr.port}/`, close: () => wss.close() };
}

function tcpTransport(host: string, port: number): Promise<ByteTransport> {
  return new Promise((resolve, reject) => {
    const s = connect({ host, port, noDelay: true }, () => resolve(transportFromStreams(s, s, () => s.destroy())));
    s.once('error', reject);
  });
}

/** A node WebSocket client as a ByteTransport (the relay + WebSocket hop without a browser). */
function wsTransport(url: string): Promise<ByteTransport> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    const data: ((b: Buffer) => void)[] = [];
    const closed: ((err?: Error) => void)[] = [];
    ws.on('message', (d: Buffer) => data.forEach((l) => l(d)));
    ws.on('close', () => closed.forEach((l) => l()));
    ws.once('error', reject);
    ws.once('open', () =>
      resolve({ write: (b) => ws.send(b), onData: (l) => data.push(l), onClose: (l) => closed.push(l), close: () => ws.close() }),
    );
  });
}

/**
 * What each hop costs, with the same RFB client on each path: a fence round trip (latency: Xvnc →
 * relay → … → client and back, no pixels) and a full non-incremental 1280×800 Raw frame (4 MB:
 * throughput). Every path's connection is open throughout, and the paths take turns sample by
 * sample (the order rotating), so each sample of one path sits between samples of the others: on a
 * loaded 2-core machine the load swings within seconds, and path-by-path blocks (as before) measured
 * those swings as much as the hops.
 */
async function hopCosts(
  paths: [string, () => Promise<ByteTransport>][],
  rounds = 12,
): Promise<Record<string, { rttMs: number; fullFrameMs: number }>> {
  const open = await Promise.all(
    paths.map(async ([n, opener]) => {
      const rfb = await RfbClient.connect(await opener(), { encodings: CONTINUOUS_ENCODINGS });
      await rfb.requestUpdate(false);
      return { n, rfb, rtt: [] as number[], full: [] as number[] };
    }),
  );
  try {
    for (let round = 0; round < rounds; round++) {
      const order = open.map((_, i) => open[(i + round) % open.length]!);
      for (const p of order) {
        for (let i = 0; i < 5; i++) {
          const t = performance.now();
          await p.rfb.sync();
          p.rtt.push(performance.now() - t);
        }
      }
      for (const p of order) {
        const t = performance.now();
        await p.rfb.requestUpdate(false);
        p.full.push(performance.now() - t);
      }
    }
  } finally {
    for (const p of open) p.rfb.close();
  }
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  return Object.fromEntries(open.map((p) => [p.n, { rttMs: median(sorted(p.rtt)), fullFrameMs: median(sorted(p.full)) }]));
}

const STREAM_RUNS = 5;
const CONCURRENT = 10;

/**
 * Starts `n` desktop sandboxes at once and times each one's first frame (create → start → a live
 * screenshot); bounded by `deadlineMs`, after which the ones still starting count as not reached.
 * Then one of them idles 5 s and its container's memory is read from its cgroup by `docker stats`
 * (usage minus inactive file cache). Every sandbox it made is removed.
 */
async function concurrentDesktops(
  desk: SandboxDesk,
  n: number,
  deadlineMs: number,
): Promise<{ reached: number; slowestMs: number; idleMiB: number }> {
  const names = Array.from({ length: n }, () => uniqueName('many'));
  const times: number[] = [];
  let all: Promise<unknown> = Promise.resolve();
  try {
    const t0 = performance.now();
    const one = async (name: string): Promise<void> => {
      await desk.createSandbox({ name, backend: 'docker', image: IMAGE });
      await desk.desktop.start(name, { geometry: '1280x800' });
      await desk.desktop.screenshot(name);
      times.push(performance.now() - t0);
    };
    let timer: NodeJS.Timeout | undefined;
    const settled = Promise.allSettled(names.map(one));
    all = settled;
    const done = await Promise.race([settled, new Promise<null>((r) => (timer = setTimeout(() => r(null), deadlineMs)))]);
    clearTimeout(timer);
    // Say why the ones that did not reach a first frame failed (or that the deadline passed).
    if (done === null) console.log(`concurrent-desktops: deadline of ${deadlineMs} ms passed with ${times.length}/${n} first frames`);
    for (const r of done ?? [])
      if (r.status === 'rejected')
        console.log(`concurrent-desktops: one failed: ${String((r.reason as Error)?.message ?? r.reason).split('\n')[0]}`);
    await new Promise((r) => setTimeout(r, 5000));
    const ref = (await desk.inspectSandbox(names[0]!)).backendRef!;
    // docker stats reads the container's cgroup (v1 or v2) and leaves out inactive file cache.
    const usage = (await docker(['stats', '--no-stream', '--format', '{{.MemUsage}}', ref])).trim();
    const m = /^([\d.]+)\s*([KMG]i?B|B)/.exec(usage);
    if (!m) throw new Error(`docker stats said ${JSON.stringify(usage)}`);
    const unit = { B: 1, KiB: 1024, KB: 1000, MiB: 1024 ** 2, MB: 1e6, GiB: 1024 ** 3, GB: 1e9 }[m[2]!] ?? 1;
    return { reached: times.length, slowestMs: Math.max(...times), idleMiB: (Number(m[1]) * unit) / 1024 ** 2 };
  } finally {
    // Starts still under way finish (each is bounded by its own timeouts) before their sandboxes go.
    await all;
    await Promise.allSettled(names.map((name) => desk.removeSandbox(name, { force: true })));
  }
}

export default async function run(): Promise<Metric[]> {
  return withTempDesk(async (desk) => {
    const sb = uniqueName('desk');
    await desk.createSandbox({ name: sb, backend: 'docker', image: IMAGE });
    const cold = await firstFrameMs(desk, sb);
    await desk.desktop.stop(sb);
    const warm = await firstFrameMs(desk, sb);

    // Something to stream: a full-window animation in the desktop's own Chromium.
    await desk.exec({ sandbox: sb, command: `cat > /tmp/anim.html <<'EOF'\n${ANIMATION}\nEOF` });
    const cdp = await chromium.connectOverCDP((await desk.desktop.browserEndpoint(sb)).httpUrl);
    const animation = await cdp.contexts()[0]!.newPage();
    await animation.goto('file:///tmp/anim.html');
    await animation.bringToFront();

    // The baseline's TCP door, for this benchmark only: socat from a container port to the socket.
    const info = await desk.inspectSandbox(sb);
    const ip = (await docker(['inspect', '-f', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', info.backendRef!])).trim();
    const sock = `/tmp/sandbox-desk-desktop-${sb}/rfb.sock`;
    // As the desktop's own user: the socket is its, 0600 in a 0700 dir (the sandbox user cannot reach it).
    // With the relay's own 64 KiB buffer (relay.ts): socat's 8 KiB default made the baseline's door
    // slower than our path on full Raw frames (303 ms against 166 ms in one run), flattering ours.
    await desk.exec({
      sandbox: sb,
      user: 'sdesk-display',
      command: `setsid -f socat -b 65536 TCP-LISTEN:5999,bind=${ip},fork,reuseaddr UNIX-CONNECT:${sock} </dev/null >/dev/null 2>&1; sleep 0.3`,
    });

    type Rate = { fps: number; bytesPerFrame: number };
    const avg = (xs: Rate[], k: keyof Rate) => xs.reduce((a, x) => a + x[k], 0) / xs.length;

    // 1. noVNC in headless Chromium: our ticketed WebSocket + exec relay vs websockify-style direct TCP.
    // The measuring page lives on an origin of its own on this machine's loopback (no CSP; noVNC served
    // from node_modules), which the app's server is told to accept, so both URLs are reachable from it.
    const novnc = join(projectRoot(), 'node_modules', '@novnc', 'novnc');
    const pageServer = await benchPage('<!doctype html><title>bench</title>', (path) => {
      const file = normalize(join(novnc, path.replace(/^\/novnc\//, '')));
      return path.startsWith('/novnc/') && file.startsWith(novnc) ? file : null;
    });
    const server = new LocalServer({ desk, extraOrigins: [pageServer.origin] });
    await server.listen();
    const proxy = await websockify(ip, 5999);
    const viewer = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--no-sandbox', '--headless', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
    const page = await viewer.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`${pageServer.origin}/`);
    // Which way our streams went (the inbox, or the exec's stdio and why): said, so a fallback cannot pass for the inbox.
    const ways = new Map<string, number>();
    const waysSub = desk.desktop.onStreamOpened((e) => {
      const k = e.via === 'inbox' ? 'inbox' : `stdio (${e.reason})`;
      ways.set(k, (ways.get(k) ?? 0) + 1);
    });
    const novncOurs: Rate[] = [];
    const novncDirect: Rate[] = [];
    // Five consecutive runs, each pairing direct TCP with our path: the goal holds in every run, not on average.
    // Each run is two halves with the two viewers in both orders in the page, and its rate is the mean of
    // the halves: the viewer connected second counted more frames (the previous results, alternating one
    // order per run: 1.106 0.992 1.268 0.924 1.075 — high whenever ours was second), so one order per run
    // measured the position, not the path.
    const halves: string[] = [];
    for (let round = 0; round < STREAM_RUNS; round++) {
      const first = await novncRates(page, [proxy.url, server.issueScreenTicket(sb).url]);
      const second = await novncRates(page, [server.issueScreenTicket(sb).url, proxy.url]);
      const mean = (x: Rate, y: Rate): Rate => ({ fps: (x.fps + y.fps) / 2, bytesPerFrame: (x.bytesPerFrame + y.bytesPerFrame) / 2 });
      novncDirect.push(mean(first[0]!, second[1]!));
      novncOurs.push(mean(first[1]!, second[0]!));
      halves.push(`direct first ${(first[1]!.fps / first[0]!.fps).toFixed(3)}, ours first ${(second[0]!.fps / second[1]!.fps).toFixed(3)}`);
      console.log(
        `stream run ${round + 1}/${STREAM_RUNS}: ours ${novncOurs[round]!.fps.toFixed(1)} fps, direct ${novncDirect[round]!.fps.toFixed(1)} fps, ratio ${(novncOurs[round]!.fps / novncDirect[round]!.fps).toFixed(3)} (halves: ${halves[round]})`,
      );
    }
    const hops = await hopCosts([
      ['direct TCP', () => tcpTransport(ip, 5999)],
      [
        'our relay (inbox, else exec stdio)',
        async () => {
          const c = await desk.desktop.openScreenStream(sb);
          return transportFromStreams(c.stdout, c.stdin, () => c.kill());
        },
      ],
      ['our relay + WebSocket', () => wsTransport(server.issueScreenTicket(sb).url)],
    ]);
    waysSub.dispose();
    console.log(`stream path: ${[...ways].map(([k, n]) => `${n}× ${k}`).join(', ')}`);
    for (const [n, h] of Object.entries(hops))
      console.log(`hop ${n}: fence round trip p50 ${h.rttMs.toFixed(2)} ms, full 1280x800 Raw frame p50 ${h.fullFrameMs.toFixed(1)} ms`);
    await viewer.close();
    pageServer.close();
    proxy.close();
    await server.close();

    // 2. The bare transport: our Node client, Raw pixels, exec relay vs a TCP socket.
    const rawOurs: Rate[] = [];
    const rawDirect: Rate[] = [];
    // One after the other (both at once would share Xvnc's encoding time and hide the transport's
    // cost), three rounds with the order alternating, so neither path always follows the other.
    for (let round = 0; round < 3; round++) {
      const direct = async () => rawDirect.push(await streamRate(await tcpTransport(ip, 5999)));
      const ours = async () => {
        const stream = await desk.desktop.openScreenStream(sb);
        rawOurs.push(await streamRate(transportFromStreams(stream.stdout, stream.stdin, () => stream.kill())));
        stream.kill();
      };
      for (const step of round % 2 ? [ours, direct] : [direct, ours]) await step();
      console.log(
        `raw stream run ${round + 1}/3: ours ${rawOurs[round]!.fps.toFixed(1)} fps, direct ${rawDirect[round]!.fps.toFixed(1)} fps`,
      );
    }

    // 3. Agent actions, each against its old path in the same run on the same animating screen: the
    // live connection (RFB input, framebuffer screenshots) vs one exec (xdotool) or a fresh RFB
    // connection per call. Clicks land on the canvas, which ignores them.
    const clickXdotool = await measure(() => desk.desktop.actWithXdotool(sb, { kind: 'click', x: 200, y: 200 }), { warmup: 2, runs: 15 });
    const clickLive = await measure(() => desk.desktop.act(sb, { kind: 'click', x: 200, y: 200 }), { warmup: 2, runs: 15 });
    const text100 = 'abcdefghij'.repeat(10);
    const typeXdotool = await measure(() => desk.desktop.actWithXdotool(sb, { kind: 'type', text: text100 }), { warmup: 1, runs: 5 });
    const typeLive = await measure(() => desk.desktop.act(sb, { kind: 'type', text: text100 }), { warmup: 1, runs: 5 });
    const shotFresh = await measure(() => desk.desktop.screenshotFreshConnection(sb), { warmup: 1, runs: 8 });
    const shotLive = await measure(() => desk.desktop.screenshot(sb), { warmup: 1, runs: 15 });
    const shot = shotLive;
    const click = clickLive;
    // The issue's second screenshot goal is for an idle screen: the animation stopped (a blank page).
    await animation.goto('about:blank');
    await new Promise((r) => setTimeout(r, 1000));
    const shotIdle = await measure(() => desk.desktop.screenshot(sb), { warmup: 2, runs: 15 });
    console.log(`screenshot-idle-p50: ${median(shotIdle).toFixed(1)} ms (goal ≤ 30 ms) — ${median(shotIdle) <= 30 ? 'MET' : 'NOT MET'}`);
    await cdp.close();
    for (const [what, ours, base, goal] of [
      ['click-p50', click, clickXdotool, 10],
      ['type-100-chars', typeLive, typeXdotool, 3],
      ['screenshot-p50', shot, shotFresh, 4],
    ] as const) {
      const ratio = median(base) / median(ours);
      console.log(
        `${what}: ${median(ours).toFixed(1)} ms vs ${median(base).toFixed(1)} ms on the old path, ratio ${ratio.toFixed(2)} (goal ≥ ${goal}) — ${ratio >= goal ? 'MET' : 'NOT MET'}`,
      );
    }

    const fps = avg(novncOurs, 'fps');
    const directFps = avg(novncDirect, 'fps');
    const ratios = novncOurs.map((r, i) => r.fps / novncDirect[i]!.fps);
    const worst = ratios.indexOf(Math.min(...ratios));
    console.log(
      `stream-fps ratios (5 runs): ${ratios.map((r) => r.toFixed(3)).join(', ')} — goal ≥ 0.95 in each: ${ratios.every((r) => r >= 0.95) ? 'MET' : 'NOT MET'}`,
    );

    // 4. Many desktops at once, then the memory of one of them idle with its live connection up.
    const many = await concurrentDesktops(desk, CONCURRENT, 240_000);
    console.log(
      `concurrent-desktops: ${many.reached}/${CONCURRENT} reached their first frame; slowest ${many.slowestMs.toFixed(0)} ms (single desktop, cold: ${cold.toFixed(0)} ms)`,
    );
    console.log(
      `idle-desktop-mem-mib: ${many.idleMiB.toFixed(0)} MiB (goal ≤ 250) → desktops-in-16gib: ${Math.floor((16 * 1024) / many.idleMiB)}`,
    );
    console.log(
      `first frame: cold ${cold.toFixed(0)} ms, warm ${warm.toFixed(0)} ms (goal ≤ 3000 ms) — ${cold <= 3000 && warm <= 3000 ? 'MET' : 'NOT MET'}`,
    );
    console.log(
      `noVNC stream fps: ${((100 * fps) / directFps).toFixed(1)}% of direct TCP (goal ≥ 95%) — ${fps >= 0.95 * directFps ? 'MET' : 'NOT MET'}`,
    );
    return [
      metric('first-frame-ms', 'ms', cold),
      metric('first-frame-warm-ms', 'ms', warm),
      metric('stream-fps', 'fps', fps, directFps),
      // Bytes per frame: lower is better; the ratio says how many times leaner than direct.
      metric('bytes-per-frame', 'bytes', avg(novncOurs, 'bytesPerFrame'), avg(novncDirect, 'bytesPerFrame')),
      metric('stream-fps-worst-run', 'fps', novncOurs[worst]!.fps, novncDirect[worst]!.fps),
      metric('concurrent-desktops-reached', 'count', many.reached),
      metric('concurrent-desktops-slowest-first-frame-ms', 'ms', many.slowestMs, cold),
      metric('idle-desktop-mem-mib', 'MiB', many.idleMiB),
      metric('desktops-in-16gib', 'count', Math.floor((16 * 1024) / many.idleMiB)),
      metric('raw-stream-fps', 'fps', avg(rawOurs, 'fps'), avg(rawDirect, 'fps')),
      // Per hop, against direct TCP (lower is better; ratio = direct / ours).
      metric('hop-fence-rtt-relay-ms', 'ms', hops['our relay (inbox, else exec stdio)']!.rttMs, hops['direct TCP']!.rttMs),
      metric('hop-fence-rtt-relay-ws-ms', 'ms', hops['our relay + WebSocket']!.rttMs, hops['direct TCP']!.rttMs),
      metric('hop-full-frame-relay-ms', 'ms', hops['our relay (inbox, else exec stdio)']!.fullFrameMs, hops['direct TCP']!.fullFrameMs),
      metric('hop-full-frame-relay-ws-ms', 'ms', hops['our relay + WebSocket']!.fullFrameMs, hops['direct TCP']!.fullFrameMs),
      metric('raw-bytes-per-frame', 'bytes', avg(rawOurs, 'bytesPerFrame'), avg(rawDirect, 'bytesPerFrame')),
      metric('click-p50-ms', 'ms', median(click), median(clickXdotool)),
      metric('type-100-chars-ms', 'ms', median(typeLive), median(typeXdotool)),
      metric('screenshot-p50-ms', 'ms', median(shot), median(shotFresh)),
      metric('screenshot-idle-p50-ms', 'ms', median(shotIdle)),
    ];
  });
}
