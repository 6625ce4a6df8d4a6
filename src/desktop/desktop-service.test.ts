import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SandboxEnvironment, SandboxProvider } from '../sandbox/provider.js';
import { SandboxDeskError } from '../shared/errors.js';
import type { LeaseStore } from '../store/lease-store.js';
import { resourcePath } from '../platform/project-root.js';
import { DESKTOP_BINARIES } from './desktop-runtime.js';
import { folderSandbox } from './test/folder-sandbox.js';
import { DesktopService } from './desktop-service.js';
import type { DesktopStream } from './desktop-stream.js';

/**
 * Which account the desktop runs as, decided from what the backend says when asked for the display
 * user. The "sandbox" here is this machine (the prefix runs the probe locally); only the answer to
 * `user: sdesk-display` is faked, as a backend would give it.
 */
function service(
  asDisplayUser: { code: number; stdout?: string; stderr?: string } | SandboxDeskError,
  accel?: 'kvm' | 'tcg' | null,
  holder: 'agent' | 'human' = 'agent',
  refusalTellEveryMs?: number,
): DesktopService {
  const env: SandboxEnvironment = {
    user: 'agent',
    home: '/home/agent',
    defaultCwd: '/home/agent',
    cwd: null,
    mounts: [],
    incarnation: 'i1',
    getTempDir: () => '/tmp',
    execPrefix: ({ user }) => {
      if (user === 'sdesk-display' && asDisplayUser instanceof SandboxDeskError) throw asDisplayUser;
      return user === 'sdesk-display' && !(asDisplayUser instanceof SandboxDeskError)
        ? [
            'sh',
            '-c',
            `printf %s "$1"; printf %s "$2" >&2; exit ${asDisplayUser.code}`,
            'fake',
            asDisplayUser.stdout ?? '',
            asDisplayUser.stderr ?? '',
          ]
        : ['env'];
    },
  };
  const provider = { name: 'fakebackend', supportsStreams: true } as SandboxProvider;
  const leases = {
    get: () =>
      holder === 'agent'
        ? { holder: 'agent', viewerId: null, epoch: 0, since: new Date(0).toISOString(), reason: null }
        : { holder: 'human', viewerId: 'person', epoch: 1, since: new Date().toISOString(), reason: 'taken by a viewer' },
  } as unknown as LeaseStore;
  return new DesktopService({
    environment: async () => env,
    provider: () => provider,
    leases,
    ...(accel !== undefined ? { accel: async () => accel } : {}),
    ...(refusalTellEveryMs !== undefined ? { refusalTellEveryMs } : {}),
  });
}

/** A DesktopService over `env` whose lease the agent holds. */
function agentDesk(env: () => SandboxEnvironment): DesktopService {
  const leases = {
    get: () => ({ holder: 'agent', viewerId: null, epoch: 0, since: new Date(0).toISOString(), reason: null }),
  } as unknown as LeaseStore;
  return new DesktopService({
    environment: async () => env(),
    provider: () => ({ name: 'fakebackend', supportsStreams: true }) as SandboxProvider,
    leases,
  });
}
describe('desktop account', () => {
  it('a sandbox without the display user: the desktop would run as the sandbox user, and status says shared and why', async () => {
    const s = await service({ code: 126, stdout: 'unable to find user sdesk-display: no matching entries in passwd file' }).status('sb');
    expect(s).toMatchObject({
      placement: 'sandbox',
      running: false,
      displayIsolation: 'shared',
      displayUser: 'agent',
      shellDisplayGranted: false,
    });
    expect(s.displayIsolationReason).toMatch(/no user sdesk-display \(unable to find user/);
  });

  it('any other failure to run as the display user fails closed: no quiet fall-back to a shared desktop', async () => {
    const desk = service({ code: 255, stderr: 'ssh: connection reset by peer' });
    await expect(desk.status('sb')).rejects.toMatchObject({
      code: 'backend_unavailable',
      message: expect.stringMatching(/as sdesk-display: ssh: connection reset/),
    });
    await expect(desk.start('sb')).rejects.toMatchObject({ code: 'backend_unavailable' });
  });

  it('a backend that refuses a prefix for the display user (an isolated plugin) runs it as the sandbox user, and says so', async () => {
    const s = await service(new SandboxDeskError('refused', 'user "sdesk-display" is not available')).status('sb');
    expect(s).toMatchObject({ displayIsolation: 'shared', displayUser: 'agent' });
    expect(s.displayIsolationReason).toMatch(/cannot run processes as sdesk-display \(user "sdesk-display" is not available\)/);
  });

  it('a backend that ignores the user (answers as someone else) is not isolated', async () => {
    const s = await service({ code: 0, stdout: 'whoami agent\n' }).status('sb');
    expect(s).toMatchObject({ displayIsolation: 'shared' });
    expect(s.displayIsolationReason).toMatch(/runs every process as agent \(it cannot switch users\)/);
  });
});

describe('agent actions while the desktop stops', () => {
  it('are refused as desktop_not_running "is stopping", not sent to a desktop on its way out', async () => {
    const desk = service({ code: 0, stdout: 'whoami agent\n' });
    const stopping = desk.stop('sb').catch(() => undefined);
    await expect(desk.act('sb', { kind: 'move', x: 1, y: 1 })).rejects.toMatchObject({
      code: 'desktop_not_running',
      message: expect.stringMatching(/is stopping/),
    });
    await expect(desk.screenshot('sb')).rejects.toMatchObject({ code: 'desktop_not_running' });
    await stopping;
    await desk.close();
  });
});

describe("a VM's accel in status", () => {
  it('under TCG: says tcg and that the browser is slow there (never dropped silently)', async () => {
    const s = await service({ code: 0, stdout: 'whoami sdesk-display\n' }, 'tcg').status('sb');
    expect(s.accel).toBe('tcg');
    if (!s.missing.includes('chromium')) expect(s.browserNote).toMatch(/TCG .*Chromium works but is slow/);
    else expect(s.browserNote).toBeNull();
  });
  it('under KVM, or not a VM: the accel (or null) and no note', async () => {
    expect(await service({ code: 0, stdout: 'whoami sdesk-display\n' }, 'kvm').status('sb')).toMatchObject({
      accel: 'kvm',
      browserNote: null,
    });
    expect(await service({ code: 0, stdout: 'whoami sdesk-display\n' }).status('sb')).toMatchObject({ accel: null, browserNote: null });
  });
});

describe('while a person holds control (issue 36): looking is not acting', () => {
  it('screenshots and waits are not refused for the lease (they reach the desktop: here, none runs); input, resize, clipboard writes and the browser are', async () => {
    const desk = service({ code: 0, stdout: 'whoami sdesk-display\n' }, undefined, 'human');
    await expect(desk.screenshot('sb', { maxWidth: 800 })).rejects.toMatchObject({ code: 'desktop_not_running' });
    await expect(desk.screenshotFreshConnection('sb')).rejects.toMatchObject({ code: 'desktop_not_running' });
    await expect(desk.waitForChange('sb', { timeoutMs: 100 })).rejects.toMatchObject({ code: 'desktop_not_running' });
    await expect(desk.waitUntilStable('sb', { quietMs: 200, timeoutMs: 300 })).rejects.toMatchObject({ code: 'desktop_not_running' });
    for (const refused of [
      () => desk.act('sb', { kind: 'click', x: 1, y: 1 }),
      () => desk.act('sb', { kind: 'type', text: 'x' }),
      () => desk.actWithXdotool('sb', { kind: 'key', keys: 'ctrl+l' }),
      () => desk.resize('sb', 1024, 768),
      () => desk.setClipboard('sb', 'x', 100),
      () => desk.browserEndpoint('sb'),
    ]) {
      await expect(refused()).rejects.toMatchObject({ code: 'human_has_control', hint: 'wait until the viewer gives control back' });
    }
    await desk.close();
  });

  it('a refused action is told (onActionRefused): what the agent tried, where, its session, and whose control refused it', async () => {
    const desk = service({ code: 0, stdout: 'whoami sdesk-display\n' }, undefined, 'human', 0);
    const refusals: unknown[] = [];
    desk.onActionRefused((r) => refusals.push(r));
    await expect(desk.act('sb', { kind: 'click', x: 100, y: 200 }, { session: 'planner' })).rejects.toMatchObject({
      code: 'human_has_control',
    });
    await expect(desk.act('sb', { kind: 'type', text: 'x' })).rejects.toMatchObject({ code: 'human_has_control' });
    await expect(desk.setClipboard('sb', 'x', 100)).rejects.toMatchObject({ code: 'human_has_control' });
    expect(refusals).toMatchObject([
      { sandbox: 'sb', kind: 'click', target: { x: 100, y: 200 }, session: 'planner', viewerId: 'person' },
      { sandbox: 'sb', kind: 'type', target: null, session: null },
      { sandbox: 'sb', kind: 'set the clipboard', target: null },
    ]);
    expect((refusals[0] as { message: string }).message).toMatch(/a human holds the control lease of sandbox sb's desktop/);
    await desk.close();
  });

  it('an agent looping on refused clicks is told every time, but its refusals are told at most every 250 ms', async () => {
    const desk = service({ code: 0, stdout: 'whoami sdesk-display\n' }, undefined, 'human');
    let told = 0;
    desk.onActionRefused(() => told++);
    // 200 clicks at once (the refusal comes before the first await of each): one told, 200 refused.
    const clicks = Array.from({ length: 200 }, (_, i) => desk.act('sb', { kind: 'click', x: i, y: i }));
    for (const c of clicks) await expect(c).rejects.toMatchObject({ code: 'human_has_control' });
    expect(told).toBe(1);
    await desk.close();
  });

  it('nothing is told while the agent may act (no refusal)', async () => {
    const desk = service({ code: 0, stdout: 'whoami sdesk-display\n' }, undefined, 'agent');
    const refusals: unknown[] = [];
    desk.onActionRefused((r) => refusals.push(r));
    await expect(desk.act('sb', { kind: 'click', x: 1, y: 1 })).rejects.toMatchObject({ code: 'desktop_not_running' });
    expect(refusals).toEqual([]);
    await desk.close();
  });
});

/**
 * Opening a screen stream to a desktop whose account is known (issue 37: a warm desktop's first frame).
 * This machine is the "sandbox": the exec prefix runs the words here and logs each exec's first word
 * (bash: the probe; python3: the inbox relay), and the "desktop" is a fake Xvnc on the layout's Unix
 * socket with the files the real probe looks for (launcher.pid naming a live process, ready).
 */
// Each test starts a few python3 and bash processes: seconds on a loaded 2-core machine.
describe('screen streams of a desktop whose account is known', { timeout: 20_000 }, () => {
  let dir: string;
  let log: string;
  let env: SandboxEnvironment;
  let desk: DesktopService;
  let fakes: Server[];
  let peers: Socket[];

  const execs = (): string[] => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []);
  const desktopDir = (sandbox: string): string => join(dir, `sandbox-desk-desktop-${sandbox}`);

  /** A desktop that the probe reads as running: an Xvnc greeting on rfb.sock, a live pid, ready. */
  async function fakeDesktop(sandbox: string): Promise<void> {
    const d = desktopDir(sandbox);
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, 'launcher.pid'), String(process.pid));
    writeFileSync(join(d, 'ready'), '');
    const fake = createServer((s) => {
      peers.push(s);
      s.on('error', () => undefined);
      s.write('RFB 003.008\n');
    });
    fakes.push(fake);
    await new Promise<void>((r) => fake.listen(join(d, 'rfb.sock'), r));
  }

  const greeting = (s: DesktopStream): Promise<string> =>
    new Promise((resolve, reject) => {
      let got = '';
      s.stdout.on('data', (d: Buffer) => {
        got += d.toString();
        if (got.includes('\n')) resolve(got);
      });
      s.once('close', () => reject(new Error(`closed after ${JSON.stringify(got)}`)));
    });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'dsvc-stream-'));
    log = join(dir, 'execs.log');
    fakes = [];
    peers = [];
    // The "sandbox" sees the host folder at the same path.
    env = { ...folderSandbox(dir, ['sh', '-c', 'printf "%s\\n" "$1" >> "$0"; exec "$@"', log]), inbox: { hostDir: dir, sandboxDir: dir } };
    desk = agentDesk(() => env);
  });

  afterEach(async () => {
    await desk.close();
    for (const p of peers) p.destroy();
    for (const f of fakes) await new Promise((r) => f.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it('a handed-over desktop (its account learnt at the fill) opens its first stream with the relay alone, no probe', async () => {
    await fakeDesktop('claimed');
    mkdirSync(desktopDir('pool-m'));
    await desk.status('pool-m'); // what the pool's start of the member learns: the account
    expect(desk.handedOver('pool-m', 'claimed', env)).toBe(true);
    rmSync(log, { force: true });
    const stream = await desk.openScreenStream('claimed');
    expect(await greeting(stream)).toBe('RFB 003.008\n');
    stream.kill();
    expect(execs()).toEqual(['python3']);
  });

  it('a handed-over desktop that is gone is probed when its stream fails, and reads desktop_not_running as before', async () => {
    await fakeDesktop('claimed');
    await desk.status('claimed');
    // The desktop ends behind the service's back: its socket and readiness go.
    for (const f of fakes.splice(0)) await new Promise((r) => f.close(r));
    rmSync(join(desktopDir('claimed'), 'ready'));
    rmSync(log, { force: true });
    await expect(desk.openScreenStream('claimed')).rejects.toMatchObject({
      code: 'desktop_not_running',
      message: 'the desktop of sandbox claimed is not running',
    });
    expect(execs()).toEqual(['python3', 'bash']);
  });

  it('a desktop restored running from a VM template is taken up like a handed-over one: started told, first stream without a probe', async () => {
    await fakeDesktop('fromtpl');
    const told: unknown[] = [];
    desk.onStatusChanged((e) => told.push(e));
    desk.restoredRunning('fromtpl', env, undefined);
    expect(told).toEqual([expect.objectContaining({ sandbox: 'fromtpl', cause: 'started', running: true })]);
    rmSync(log, { force: true });
    const stream = await desk.openScreenStream('fromtpl');
    expect(await greeting(stream)).toBe('RFB 003.008\n');
    stream.kill();
    expect(execs()).toEqual(['python3']); // the relay alone: no probe, no start
  });

  it('a desktop restored from a VM template has no inbox (a VM): its first stdio stream opens without a probe, the next one is probed', async () => {
    env = { ...env, inbox: undefined };
    await fakeDesktop('vmcopy');
    desk.restoredRunning('vmcopy', env, undefined);
    rmSync(log, { force: true });
    const first = await desk.openScreenStream('vmcopy');
    expect(await greeting(first)).toBe('RFB 003.008\n');
    first.kill();
    expect(execs()).toEqual(['bash']); // the stdio relay alone: no probe
    rmSync(log, { force: true });
    const second = await desk.openScreenStream('vmcopy');
    expect(await greeting(second)).toBe('RFB 003.008\n');
    second.kill();
    expect(execs()).toEqual(['bash', 'bash']); // checked once only: later streams are probed as before
  });

  it('nothing known here (another process filled the pool): the claim is told to take it up by a probe', () => {
    expect(desk.handedOver('pool-elsewhere', 'claimed', env)).toBe(false);
  });

  it('a stream opened ahead at the fill is the first stream after the claim (no exec at all), once', async () => {
    await fakeDesktop('pool-m');
    const ahead = await desk.openAhead('pool-m');
    // The claim moves the folder and leaves the old name a link (desktop-handover.ts).
    symlinkSync(desktopDir('pool-m'), desktopDir('claimed'));
    expect(desk.handedOver('pool-m', 'claimed', env, ahead)).toBe(true);
    rmSync(log, { force: true });
    const first = await desk.openScreenStream('claimed');
    expect(first).toBe(ahead);
    // The greeting waited unread since the fill: the taker starts a fresh RFB session.
    expect(await greeting(first)).toBe('RFB 003.008\n');
    expect(execs()).toEqual([]);
    const second = await desk.openScreenStream('claimed');
    expect(second).not.toBe(ahead);
    expect(await greeting(second)).toBe('RFB 003.008\n');
    expect(execs()).toEqual(['python3']);
    first.kill();
    second.kill();
  });

  it('a stream opened ahead that ended while waiting (the desktop died) is not handed out: the next open probes', async () => {
    await fakeDesktop('claimed');
    const ahead = await desk.openAhead('claimed');
    desk.handedOver('claimed', 'claimed', env, ahead);
    const closed = new Promise<void>((r) => ahead.once('close', () => r()));
    for (const p of peers) p.destroy();
    for (const f of fakes.splice(0)) await new Promise((r) => f.close(r));
    rmSync(join(desktopDir('claimed'), 'ready'));
    await closed;
    await expect(desk.openScreenStream('claimed')).rejects.toMatchObject({ code: 'desktop_not_running' });
  });
});

describe("a pool member's desktop start (startPooled)", { timeout: 20_000 }, () => {
  let dir: string;
  let log: string;
  let env: SandboxEnvironment;
  let desk: DesktopService;

  /** Which of the desktop's scripts each exec ran, in order (the prefix writes one word per exec). */
  const execs = (): string[] => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []);

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'dsvc-pooled-'));
    log = join(dir, 'execs.log');
    // The "sandbox" is this machine, its desktop's binaries stubs (the probe asks for them); the launch
    // itself is faked (no Xvnc here) by a `setsid` that only writes the launcher's readiness file, which the
    // real start script then finds.
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    for (const b of DESKTOP_BINARIES) writeFileSync(join(bin, b), '#!/bin/sh\n', { mode: 0o755 });
    writeFileSync(join(bin, 'setsid'), '#!/bin/sh\n: > "$4/ready"\n', { mode: 0o755 });
    const prefix = `export PATH="${bin}:$PATH"
case "$3" in
  *"printf 'whoami"*) t=probe ;; *setsid*) t=start ;; *"sudo -n"*) t=isolation ;; *) t=$1 ;;
esac
printf '%s\\n' "$t" >> "$0"
exec "$@"`;
    env = folderSandbox(dir, ['sh', '-c', prefix, log]);
    desk = agentDesk(() => env);
  });

  afterEach(async () => {
    await desk.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs the probe and the start (copy, launch, readiness wait: one exec) only: no status round, nothing told (no operation, no event), and the account known for the claim', async () => {
    const told: string[] = [];
    desk.onStatusChanged((c) => told.push(`${c.sandbox} ${c.cause}`));
    expect(await desk.startPooled('pool-m')).toEqual({ running: true, reason: null });
    // Each exec is a process spawned on the service's event loop plus the engine's work beside a viewed desktop.
    expect(execs()).toEqual(['probe', 'start']);
    expect(told).toEqual([]);
    // The one exec copied both files whole from its stdin (the launcher's length splits them) into a 0700 folder.
    const d = join(dir, 'sandbox-desk-desktop-pool-m');
    expect(readFileSync(join(d, 'launcher.sh'))).toEqual(readFileSync(resourcePath('desktop', 'launcher.sh')));
    expect(readFileSync(join(d, 'cdp-pipe.py'))).toEqual(readFileSync(resourcePath('desktop', 'cdp-pipe.py')));
    expect(statSync(d).mode & 0o777).toBe(0o700);
    // What the claim needs is learnt all the same: the account, so the claimer's first stream needs no probe.
    expect(desk.handedOver('pool-m', 'claimed', env)).toBe(true);
    expect(told).toEqual(['claimed started']);
  });

  it('a launcher that fails says why, from the same exec', async () => {
    writeFileSync(join(dir, 'bin', 'setsid'), '#!/bin/sh\necho "Xvnc: no free display" > "$4/failed"\n', { mode: 0o755 });
    await expect(desk.startPooled('pool-m')).rejects.toMatchObject({
      code: 'backend_unavailable',
      message: 'the desktop failed to start: Xvnc: no free display',
    });
    expect(execs()).toEqual(['probe', 'start']);
  });

  it("a readiness file left by a desktop killed behind the app's back does not count: the start waits for its own launcher's word", async () => {
    // The killed desktop's folder, with its `ready`; this launcher fails, a moment after it was started.
    const layoutDir = join(dir, 'sandbox-desk-desktop-pool-m');
    mkdirSync(layoutDir, { mode: 0o700 });
    writeFileSync(join(layoutDir, 'ready'), '');
    writeFileSync(join(dir, 'bin', 'setsid'), '#!/bin/sh\n(sleep 0.3; echo "Xvnc: no free display" > "$4/failed") &\n', { mode: 0o755 });
    await expect(desk.startPooled('pool-m')).rejects.toMatchObject({ message: 'the desktop failed to start: Xvnc: no free display' });
  });

  it("a person's start of the same desktop goes on to a status round and tells it (what a pool member is spared)", async () => {
    const told: string[] = [];
    desk.onStatusChanged((c) => told.push(`${c.sandbox} ${c.cause}`));
    await desk.start('mine', { record: false });
    expect(execs()).toEqual(['probe', 'start', 'probe']);
    expect(told).toEqual(['mine starting', 'mine started']);
  });
});
