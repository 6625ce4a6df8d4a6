/**
 * Issue 14's "Docker restarted while the window is open": sandboxes go unavailable, then come back,
 * without a reload. The machine's own engine is shared, so this test restarts an engine of its own —
 * a second dockerd (own data root, exec root, containerd, socket and bridge; no iptables) that only
 * this test's core talks to (DOCKER_HOST in this test file's process) — and watches the real window
 * in browser mode through it.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from './helpers.js';
import { openUi, type UiHarness } from './ui-harness.js';

const DIR = join(tmpdir(), uniqueName('sdesk-dockerd'));
const SOCK = join(DIR, 'docker.sock');
// A bridge of its own: with `--bridge=none` dockerd deletes the machine's docker0 as "stale" at start.
const BRIDGE = `sdbr${uniqueName('x').slice(-6)}`;
const BRIDGE_CIDR = `10.254.${1 + Math.floor(Math.random() * 250)}.1/24`;
const hadDocker0 = existsSync('/sys/class/net/docker0');

function dockerd(): ChildProcess {
  const args = [
    `--data-root=${join(DIR, 'root')}`,
    `--exec-root=${join(DIR, 'exec')}`,
    `--pidfile=${join(DIR, 'dockerd.pid')}`,
    `--host=unix://${SOCK}`,
    `--bridge=${BRIDGE}`,
    '--iptables=false',
    '--ip6tables=false',
    '--ip-masq=false',
  ];
  return spawn('dockerd', args, { stdio: 'ignore' });
}

function ours(...args: string[]): string {
  return execFileSync('docker', ['-H', `unix://${SOCK}`, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Waits for our engine to answer (up to 90 s; it starts its own containerd first). */
async function engineUp(): Promise<void> {
  const until = Date.now() + 90_000;
  for (;;) {
    try {
      ours('version', '--format', '{{.Server.Version}}');
      return;
    } catch (err) {
      if (Date.now() > until) throw new Error(`the test's own dockerd did not answer on ${SOCK} in 90 s`, { cause: err });
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

async function engineStopped(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null) return;
  await new Promise<void>((resolve) => {
    proc.once('exit', () => resolve());
    proc.kill('SIGTERM');
  });
}

describe('Docker restarted while the window is open (an engine of this test’s own)', () => {
  let engine: ChildProcess;
  let ui: UiHarness;
  const sb = uniqueName('restart');

  beforeAll(async () => {
    mkdirSync(DIR, { recursive: true });
    execFileSync('ip', ['link', 'add', BRIDGE, 'type', 'bridge']);
    execFileSync('ip', ['addr', 'add', BRIDGE_CIDR, 'dev', BRIDGE]);
    execFileSync('ip', ['link', 'set', BRIDGE, 'up']);
    engine = dockerd();
    await engineUp();
    // The sandbox image, from the machine's engine into ours (read only there).
    execFileSync('bash', ['-c', 'docker save sandbox-desk/base:latest | docker -H "unix://$1" load', 'load', SOCK], { stdio: 'ignore' });
    process.env.DOCKER_HOST = `unix://${SOCK}`;
    ui = await openUi({ width: 1280, height: 800 });
    await ui.t.desk.createSandbox({ name: sb, backend: 'docker', image: 'sandbox-desk/base:latest' });
  }, 300_000);

  afterAll(async () => {
    await ui?.close();
    if (engine) await engineStopped(engine);
    // dockerd unmounts its layers as it stops; whatever a crash left mounted is unmounted before removal.
    try {
      const mounts = readFileSync('/proc/self/mounts', 'utf8')
        .split('\n')
        .map((l) => l.split(' ')[1] ?? '')
        .filter((m) => m.startsWith(DIR))
        .sort((a, b) => b.length - a.length);
      for (const m of mounts) execFileSync('umount', ['-l', m], { stdio: 'ignore' });
    } catch {
      // nothing mounted, or not ours to unmount
    }
    if (existsSync(DIR)) rmSync(DIR, { recursive: true, force: true });
    try {
      execFileSync('ip', ['link', 'del', BRIDGE], { stdio: 'ignore' });
    } catch {
      // never made
    }
  }, 120_000);

  it('the sandbox shows unavailable while the engine is down and comes back when it is up, on the same page', async () => {
    const p = ui.page;
    await p.goto(ui.server.appUrl());
    const state = p.getByTestId(`sandbox-state-${sb}`);
    await expect.poll(() => state.textContent(), { timeout: 60_000 }).toMatch(/running/);
    // A mark on the page: a reload would lose it.
    await p.evaluate(() => ((window as unknown as { __sameDocument: number }).__sameDocument = 42));

    await engineStopped(engine);
    await expect.poll(() => state.textContent(), { timeout: 90_000, interval: 500 }).toMatch(/unavailable/);
    const down = await p.getByTestId(`sandbox-row-${sb}`).getAttribute('title');
    expect(down ?? '').toMatch(/docker|engine|reach/i);

    engine = dockerd();
    await engineUp();
    // Back: the container is there again (stopped by the engine's shutdown, or running), not unavailable.
    await expect.poll(() => state.textContent(), { timeout: 90_000, interval: 500 }).toMatch(/running|stopped|exited/);
    expect(await p.evaluate(() => (window as unknown as { __sameDocument?: number }).__sameDocument)).toBe(42);
    // The machine's own engine lost nothing: its bridge is still there.
    expect(existsSync('/sys/class/net/docker0')).toBe(hadDocker0);
  }, 400_000);
});
