import { describe, expect, it } from 'vitest';
import type { ProgressEvent } from '../sandbox/provider.js';
import type { HeldTerminal } from '../session/terminal-registry.js';
import { captureRunning, giveUp, restartWhatRan, type RestartHost } from './restore-restarts.js';

const held = (id: string, session = 'tty'): HeldTerminal => ({
  terminalId: id,
  sandbox: 's',
  session,
  startedIn: '/',
  createdAt: '2026-01-01T00:00:00Z',
  cols: 80,
  rows: 24,
  scrollback: Buffer.from('before$ '),
});

/** A core whose desktop, shells and terminals are plain fields; every call is logged. */
function fakeHost(over: Partial<RestartHost> & { desktop?: { running: boolean; geometry?: string; granted?: boolean } } = {}) {
  const calls: string[] = [];
  const host: RestartHost = {
    desktopStatus: async () => ({
      running: over.desktop?.running ?? false,
      geometry: over.desktop?.geometry ?? null,
      shellDisplayGranted: over.desktop?.granted ?? false,
    }),
    startDesktop: async (n, o) => (calls.push(`desktop ${n} ${JSON.stringify(o)}`), { running: true, reason: null }),
    liveShells: () => ['agent', 'gone'],
    openShell: async (n, s) => (calls.push(`shell ${n} ${s}`), []),
    holdTerminals: () => (calls.push('hold'), [held('t1'), held('t2', 'other')]),
    reopenTerminals: async (h) => (
      calls.push(`reopen ${h.map((x) => x.terminalId).join(',')}`),
      { reopened: h.map((x) => x.terminalId), failed: [] }
    ),
    releaseTerminals: (h) => void calls.push(`release ${h.map((x) => x.terminalId).join(',')}`),
    ...over,
  };
  return { host, calls };
}

describe('what a restore or fork starts again, decided from what ran before', () => {
  it('a desktop running before the restore is started again with its size and display grant', async () => {
    const { host, calls } = fakeHost({ desktop: { running: true, geometry: '1024x768', granted: true } });
    const before = await captureRunning(host, 's', { holdTerminals: true });
    expect(before.desktop).toEqual({ geometry: '1024x768', grantShellDisplay: true });
    const steps: ProgressEvent[] = [];
    const w = await restartWhatRan(host, 's', before, ['agent'], (e) => steps.push(e));
    expect(w).toEqual([]);
    expect(calls).toContain('desktop s {"geometry":"1024x768","grantShellDisplay":true}');
    expect(steps.map((e) => e.step)).toEqual(['shells', 'desktop', 'terminals']);
  });

  it('a desktop that was stopped stays stopped; one whose state cannot be read is not started on a guess', async () => {
    for (const host of [
      fakeHost({ desktop: { running: false } }).host,
      fakeHost({ desktopStatus: () => Promise.reject(new Error('engine slow')) }).host,
    ]) {
      const calls: string[] = [];
      const before = await captureRunning(host, 's', { holdTerminals: false });
      expect(before.desktop).toBeNull();
      await restartWhatRan(
        { ...host, startDesktop: async () => (calls.push('desktop'), { running: true, reason: null }) },
        's',
        before,
        [],
        undefined,
      );
      expect(calls).toEqual([]);
    }
  });

  it('the shells of sessions that had one come back, but not of sessions the restored sandbox does not have', async () => {
    const { host, calls } = fakeHost();
    const before = await captureRunning(host, 's', { holdTerminals: false });
    await restartWhatRan(host, 's', before, ['agent', 'never-had-one'], undefined);
    expect(calls.filter((c) => c.startsWith('shell'))).toEqual(['shell s agent']);
  });

  it('a restore holds the terminals and reopens them all; a fork holds none (the source keeps its own)', async () => {
    const restore = fakeHost();
    const before = await captureRunning(restore.host, 's', { holdTerminals: true });
    await restartWhatRan(restore.host, 's', before, [], undefined);
    expect(restore.calls).toEqual(['hold', 'reopen t1,t2']);

    const fork = fakeHost();
    const b2 = await captureRunning(fork.host, 's', { holdTerminals: false });
    await restartWhatRan(fork.host, 'fork-1', b2, [], undefined);
    expect(fork.calls).toEqual([]);
  });

  it('what does not come back is a not_restarted warning (and a step saying so); the rest still comes back', async () => {
    const { host, calls } = fakeHost({
      desktop: { running: true },
      startDesktop: () => Promise.reject(new Error('Xvnc exited')),
      openShell: () => Promise.reject(new Error('no stream')),
      reopenTerminals: async () => ({ reopened: ['t1'], failed: [{ terminalId: 't2', error: 'sandbox not running' }] }),
    });
    const before = await captureRunning(host, 's', { holdTerminals: true });
    const steps: ProgressEvent[] = [];
    const w = await restartWhatRan(host, 's', before, ['agent'], (e) => steps.push(e));
    expect(w.map((x) => x.code)).toEqual(['not_restarted', 'not_restarted', 'not_restarted']);
    expect(w.map((x) => x.message)).toEqual([
      's: the shell of session "agent" did not come back: no stream',
      's: the desktop did not come back: Xvnc exited',
      's: terminal t2 did not come back: sandbox not running',
    ]);
    expect(steps.filter((e) => e.step === 'not-restarted').map((e) => e.message)).toEqual(w.map((x) => x.message));
    expect(calls).toEqual(['hold']);
  });

  it('a desktop that reads not running after its start is a warning with its reason', async () => {
    const { host } = fakeHost({ desktop: { running: true }, startDesktop: async () => ({ running: false, reason: 'chromium missing' }) });
    const w = await restartWhatRan(host, 's', await captureRunning(host, 's', { holdTerminals: false }), [], undefined);
    expect(w).toEqual([{ code: 'not_restarted', message: 's: the desktop did not come back: chromium missing' }]);
  });

  it('a restore that failed gives its held terminals up', async () => {
    const { host, calls } = fakeHost();
    giveUp(host, await captureRunning(host, 's', { holdTerminals: true }));
    expect(calls).toEqual(['hold', 'release t1,t2']);
  });
});
