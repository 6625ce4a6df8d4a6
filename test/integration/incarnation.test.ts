/**
 * Incarnations, for real: a desktop sandbox (Xvnc + Xfce + Chromium in Docker) restarted behind the
 * app's back. Everything tied to the old incarnation (its terminal, its session shell, the DevTools
 * forward) ends with it; afterwards a terminal and `desktop browser` work at once, through a new
 * forward, and the old forward's port no longer answers. And a QEMU VM rebooted by another app
 * process onto another SSH port (slow: SANDBOX_DESK_SKIP_SLOW=1 skips it, like the other QEMU tests).
 */
import { execFileSync } from 'node:child_process';
import { connect, createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { LocalServer } from '../../src/api/local-server.js';
import type { TerminalSession } from '../../src/exec/terminal.js';
import type { EnvironmentDisposed } from '../../src/session/environment-manager.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

const DESKTOP_IMAGE = 'sandbox-desk/desktop:latest';

/** The Chromium DevTools version document through a forward; throws when nothing answers. */
async function cdpVersion(port: number): Promise<{ Browser?: string; webSocketDebuggerUrl?: string }> {
  const res = await fetch(`http://127.0.0.1:${port}/json/version`, { signal: AbortSignal.timeout(5_000) });
  return (await res.json()) as { Browser?: string; webSocketDebuggerUrl?: string };
}

/** Whether anything accepts a TCP connection on 127.0.0.1:<port> (a forward whose server closed refuses). */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

/** Attaches a collecting sink, and resolves with the terminal's first cwd report. */
function watch(terminal: TerminalSession): { cwds: string[]; screen: () => string } {
  const cwds: string[] = [];
  let out = '';
  terminal.onCwd((c) => cwds.push(c));
  terminal.attach({ send: (d, done) => ((out += d.toString()), done()), bufferedAmount: 0 });
  return { cwds, screen: () => out };
}

describe("a docker restart behind the app's back ends the old incarnation's terminal, shell and forward", () => {
  let t: TestDesk;
  let sb: string;
  let server: LocalServer;

  beforeAll(async () => {
    t = tempDesk();
    sb = uniqueName('inc');
    await t.desk.createSandbox({ name: sb, backend: 'docker', image: DESKTOP_IMAGE });
    server = new LocalServer({ desk: t.desk });
    await server.listen();
  }, 180_000);
  afterAll(async () => {
    await server?.close();
    await t?.dispose();
  });

  it('after the restart a terminal and the browser endpoint work at once, through a new forward; the old port is gone', async () => {
    await t.desk.desktop.start(sb);
    const before = await t.desk.desktop.browserEndpoint(sb);
    expect((await cdpVersion(before.localPort)).webSocketDebuggerUrl).toMatch(/^ws:/);

    const { terminal: oldTerminal } = await t.desk.io.openTerminal({ sandbox: sb, session: 'tty', cols: 80, rows: 24 });
    const old = watch(oldTerminal);
    await expect.poll(() => old.cwds.length, { timeout: 20_000 }).toBeGreaterThan(0);
    // The terminal's viewer socket, as the window has it: it closes when the shell exits (an event, no poll).
    const ws = new WebSocket(server.terminalTicket(oldTerminal.id).url);
    const wsClosed = new Promise<{ code: number; reason: string }>((resolve) =>
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    await new Promise<void>((resolve, reject) => (ws.once('open', () => resolve()), ws.once('error', reject)));
    await t.desk.exec({ sandbox: sb, command: 'cd /usr', session: 'cmd' });

    const disposed: EnvironmentDisposed[] = [];
    const sub = t.desk.environments.onEnvironmentDisposed((e) => disposed.push(e));
    const id = (await t.desk.inspectSandbox(sb)).backendRef!;
    execFileSync('docker', ['restart', '-t', '0', id], { stdio: 'ignore' });

    // The desktop's processes died with the container: start it again (this notices the new incarnation).
    await t.desk.desktop.start(sb);
    expect(disposed.map((d) => `${d.sandbox}:${d.reason}`)).toEqual([`${sb}:changed`]);
    sub.dispose();

    const [opened, after] = await Promise.all([
      t.desk.io.openTerminal({ sandbox: sb, session: 'tty', cols: 80, rows: 24 }),
      t.desk.desktop.browserEndpoint(sb),
    ]);
    const fresh = watch(opened.terminal);
    opened.terminal.write('cd /etc\r');
    await expect.poll(() => fresh.cwds.at(-1), { timeout: 20_000 }).toBe('/etc');
    expect(after.localPort).not.toBe(before.localPort);
    expect((await cdpVersion(after.localPort)).webSocketDebuggerUrl).toMatch(/^ws:/);
    // Nothing listens on the old forward's port any more.
    expect(await listening(before.localPort)).toBe(false);

    // The old terminal ended with its incarnation, and its viewer socket was closed because of it.
    await expect.poll(() => oldTerminal.exited, { timeout: 10_000 }).toBe(true);
    expect(() => t.desk.io.terminal(oldTerminal.id)).toThrow(/no terminal/);
    expect(await wsClosed).toEqual({ code: 1000, reason: 'shell exited' });

    // The command session's shell was of the old incarnation: its next command says so, and keeps its place.
    const r = await t.desk.exec({ sandbox: sb, command: 'pwd', session: 'cmd' });
    expect(r.stdout).toBe('/usr\n');
    expect(r.warnings.map((w) => w.code)).toContain('environment_recreated');
    opened.terminal.dispose();
  });

  it('stopping the sandbox ends its forward and terminals at once', async () => {
    await t.desk.desktop.start(sb);
    const ep = await t.desk.desktop.browserEndpoint(sb);
    const { terminal } = await t.desk.io.openTerminal({ sandbox: sb, session: 'tty2', cols: 80, rows: 24 });
    const seen = watch(terminal);
    await expect.poll(() => seen.cwds.length, { timeout: 20_000 }).toBeGreaterThan(0);
    expect(await listening(ep.localPort)).toBe(true);
    await t.desk.stopSandbox(sb);
    expect(await listening(ep.localPort)).toBe(false);
    await expect.poll(() => terminal.exited, { timeout: 10_000 }).toBe(true);
  });
});

const SKIP_SLOW = process.env.SANDBOX_DESK_SKIP_SLOW === '1';

describe.skipIf(SKIP_SLOW)(
  "a QEMU reboot behind the app's back onto another SSH port (slow: real VM; SANDBOX_DESK_SKIP_SLOW=1 skips)",
  () => {
    let t: TestDesk;
    const vm = uniqueName('vmi');

    beforeAll(async () => {
      t = tempDesk();
      // A generous boot limit: under TCG on a busy 2-core host a boot can take minutes.
      await t.desk.createSandbox({ name: vm, backend: 'qemu', image: 'debian-test', options: { cpuType: 'qemu64', bootTimeout: '1200' } });
    }, 1_300_000);
    afterAll(async () => {
      await t?.dispose();
    }, 120_000);

    it('a command and a terminal work at once through the new port; the old terminal ended', async () => {
      const desk = t.desk;
      const before = await desk.inspectSandbox(vm);
      const oldPort = before.details?.sshPort as number;
      expect(oldPort).toEqual(expect.any(Number));
      const session = uniqueName('rb');
      await desk.exec({ sandbox: vm, command: 'cd /tmp', session });
      const { terminal: oldTerminal } = await desk.io.openTerminal({ sandbox: vm, session, cols: 80, rows: 24 });
      const old = watch(oldTerminal);
      await expect.poll(() => old.cwds.length, { timeout: 60_000 }).toBeGreaterThan(0);

      // Another app process reboots the VM while this test holds the old SSH port: the new boot must use
      // another one, and anything still aimed at the old port would reach this squatter, not the VM.
      const other = t.reopen();
      await other.stopSandbox(vm);
      const squatter: Server = createServer((sock) => sock.destroy());
      await new Promise<void>(
        (resolve, reject) => (squatter.once('error', reject), squatter.listen(oldPort, '127.0.0.1', () => resolve())),
      );
      try {
        const rebooted = await other.startSandbox(vm);
        expect(rebooted.details?.sshPort).not.toBe(oldPort);
        const disposed: EnvironmentDisposed[] = [];
        const sub = desk.environments.onEnvironmentDisposed((e) => disposed.push(e));
        const [r, opened] = await Promise.all([
          desk.exec({ sandbox: vm, command: 'pwd', session }),
          desk.io.openTerminal({ sandbox: vm, session: uniqueName('rt'), cols: 80, rows: 24 }),
        ]);
        sub.dispose();
        expect(disposed.map((d) => d.reason)).toEqual(['changed']);
        expect(r.stdout).toBe('/tmp\n');
        expect(r.warnings.map((w) => w.code)).toContain('environment_recreated');
        const fresh = watch(opened.terminal);
        await expect.poll(() => fresh.cwds.length, { timeout: 60_000 }).toBeGreaterThan(0);
        opened.terminal.write('cd /var\r');
        await expect.poll(() => fresh.cwds.at(-1), { timeout: 60_000 }).toBe('/var');
        await expect.poll(() => oldTerminal.exited, { timeout: 30_000 }).toBe(true);
        opened.terminal.dispose();
      } finally {
        await new Promise<void>((resolve) => squatter.close(() => resolve()));
      }
    }, 1_300_000);
  },
);
