import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { SandboxDesk, type SandboxDeskOptions } from '../../src/api/sandbox-desk.js';
import { proxyPid } from '../../src/sandbox/network/proxy-supervisor.js';
import { processAlive } from '../../src/platform/process-alive.js';

/** A core with its own temporary data directory; `dispose` removes its sandboxes and the directory. */
export interface TestDesk {
  desk: SandboxDesk;
  dataDir: string;
  /** Opens a second core on the same data directory, like an app restart. */
  reopen(opts?: Omit<SandboxDeskOptions, 'dataDir'>): SandboxDesk;
  dispose(): Promise<void>;
}

export function tempDesk(opts: Omit<SandboxDeskOptions, 'dataDir'> = {}): TestDesk {
  const dataDir = mkdtempSync(join(tmpdir(), 'sdesk-test-'));
  const opened: SandboxDesk[] = [];
  const open = (o: Omit<SandboxDeskOptions, 'dataDir'>): SandboxDesk => {
    const d = new SandboxDesk({ ...o, dataDir });
    opened.push(d);
    return d;
  };
  const t: TestDesk = {
    desk: open(opts),
    dataDir,
    reopen: (o = opts) => open(o),
    async dispose() {
      for (const d of opened) await d.close().catch(() => undefined);
      // With the same plugins, so plugin backends' sandboxes are removed too.
      const cleaner = new SandboxDesk({ dataDir, ...(opts.plugins !== undefined ? { plugins: opts.plugins } : {}) });
      for (const s of cleaner.store.sandboxes.list()) await cleaner.removeSandbox(s.name, { force: true }).catch(() => undefined);
      await cleaner.close();
      await stopProxyOf(dataDir);
      rmSync(dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
    },
  };
  return t;
}

/**
 * Ends the data directory's own egress proxy (started by this test's core, detached: it outlives the
 * core) and waits until it has exited. Left alone it exits a second after its last sandbox is gone and
 * writes its farewell into the data directory on the way — while the directory is being removed, which
 * then fails with ENOTEMPTY.
 */
async function stopProxyOf(dataDir: string): Promise<void> {
  const pid = proxyPid(dataDir);
  if (pid === null) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return; // already gone
  }
  for (let i = 0; i < 100 && processAlive(pid); i++) await new Promise((r) => setTimeout(r, 50));
}

/**
 * One method of a local server's HTTP API (`serve`, LocalServer), as the window calls it: its `ok`, or an
 * Error naming the method and the server's message. Tests of the raw responses (status codes, error
 * bodies) fetch themselves.
 */
export async function callApi<T>(server: { origin: string; token: string }, method: string, params: unknown): Promise<T> {
  const res = await fetch(`${server.origin}/api/call/${method}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${server.token}` },
    body: JSON.stringify(params),
  });
  const body = (await res.json()) as { ok?: T; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.ok as T;
}

export function uniqueName(prefix = 't'): string {
  return `${prefix}-${randomBytes(3).toString('hex')}`;
}

/**
 * Debian's Chromium as the browser tests launch it (as root, headless, on a machine with no network
 * beyond loopback: without the background-networking flags it keeps trying Google's hosts).
 */
export const HEADLESS_CHROMIUM = {
  executablePath: '/usr/bin/chromium',
  args: [
    '--no-sandbox',
    '--headless',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
};

/**
 * QEMU processes whose command line names this VM directory. The directory is under the test's own
 * data dir, so only the test's own VMs are counted (the machine is shared).
 */
export function qemuProcessesOf(vmDir: string): number[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8');
        return cmd.startsWith('qemu-system') && cmd.includes(vmDir);
      } catch {
        return false;
      }
    })
    .map(Number);
}
