import { describe, expect, it } from 'vitest';
import type { ServiceInfo } from '../shared/service-info.js';
import { versionHandshake } from './version-handshake.js';

const info = (version: string, busy: Partial<ServiceInfo['busy']> = {}, protocol = 1): ServiceInfo => ({
  version,
  pid: 42,
  protocol,
  dataDir: '/d',
  startedAt: '2026-01-01T00:00:00.000Z',
  busy: { runningSandboxes: 0, clients: 1, recordings: 0, ...busy },
});

describe('versionHandshake', () => {
  it('the same version and protocol: use it', () => {
    expect(versionHandshake('1.2.0', info('1.2.0'))).toEqual({ action: 'use' });
  });

  it('another version with nothing running: restart it (other clients connected do not pin it)', () => {
    const h = versionHandshake('1.2.0', info('1.1.0', { clients: 3 }));
    expect(h.action).toBe('restart');
    expect(h.action === 'restart' && h.reason).toContain('runs version 1.1.0');
  });

  it('another protocol is another version too', () => {
    expect(versionHandshake('1.2.0', info('1.2.0', {}, 2)).action).toBe('restart');
  });

  it('another version with a running sandbox: refused with version_mismatch and what to do', () => {
    const h = versionHandshake('1.2.0', info('1.1.0', { runningSandboxes: 2 }));
    if (h.action !== 'refuse') throw new Error(`expected a refusal, got ${h.action}`);
    expect(h.error.code).toBe('version_mismatch');
    expect(h.error.message).toContain('2 running sandbox');
    expect(h.error.hint).toBe('stop your sandboxes or run `sandbox-desk service stop --force`');
  });
});
