import { describe, expect, it } from 'vitest';
import type { SandboxEnvironment, SandboxProvider } from '../sandbox/provider.js';
import type { LeaseStore } from '../store/lease-store.js';
import { DesktopService, type DesktopStatusChange } from './desktop-service.js';

/** A desktop service whose "sandbox" is this machine, where no desktop runs (the probe runs locally). */
function service(): DesktopService {
  const env: SandboxEnvironment = {
    user: 'agent',
    home: '/home/agent',
    defaultCwd: '/home/agent',
    cwd: null,
    mounts: [],
    incarnation: 'i1',
    getTempDir: () => '/tmp/sdesk-status-changed-test',
    execPrefix: () => ['env'],
  };
  const provider = { name: 'fakebackend', supportsStreams: true } as SandboxProvider;
  const leases = {
    get: () => ({ holder: 'agent', viewerId: null, epoch: 0, since: new Date(0).toISOString(), reason: null }),
  } as unknown as LeaseStore;
  return new DesktopService({ environment: async () => env, provider: () => provider, leases });
}

describe('DesktopService.onStatusChanged', () => {
  it('a start says it began, then how it ended — here refused — whoever called it', async () => {
    const desktop = service();
    const seen: DesktopStatusChange[] = [];
    desktop.onStatusChanged((c) => seen.push(c));
    await expect(desktop.start('sb', { geometry: '10x10' })).rejects.toMatchObject({ code: 'invalid_input' });
    expect(seen.map((c) => [c.sandbox, c.cause, c.running])).toEqual([
      ['sb', 'starting', null],
      ['sb', 'start-failed', null],
    ]);
    expect((seen[1] as { error: unknown }).error).toMatchObject({ code: 'invalid_input' });
    await desktop.close();
  });
});
