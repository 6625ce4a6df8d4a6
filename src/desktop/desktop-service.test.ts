import { describe, expect, it } from 'vitest';
import type { SandboxEnvironment, SandboxProvider } from '../sandbox/provider.js';
import { SandboxDeskError } from '../shared/errors.js';
import type { LeaseStore } from '../store/lease-store.js';
import { DesktopService } from './desktop-service.js';

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
