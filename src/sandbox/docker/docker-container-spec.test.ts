import { describe, expect, it } from 'vitest';
import { containerCreateOptions } from './docker-container-spec.js';
import { INBOX_SANDBOX_DIR } from './docker-inbox.js';

describe('the one container description (provision, restore, fork)', () => {
  it('carries the name, labels, mounts, limits and hardening, whatever image it is made from', () => {
    const spec = {
      name: 'demo',
      image: 'sandbox-desk/base:latest',
      user: 'agent',
      mounts: [{ hostPath: '/h', sandboxPath: '/w', readOnly: true }],
      env: { A: '1' },
      options: { cpus: '1.5', memory: '256' },
      labels: { 'io.sandbox-desk.managed': 'true' },
      resourceName: 'sdesk-abc-demo',
    };
    const o = containerCreateOptions(spec, 'sandbox-desk/checkpoint:abc');
    expect(o).toMatchObject({ name: 'sdesk-abc-demo', Image: 'sandbox-desk/checkpoint:abc', Hostname: 'demo', User: 'root', Env: ['A=1'] });
    expect(o.Labels).toEqual(spec.labels);
    expect(o.HostConfig).toMatchObject({
      Privileged: false,
      PublishAllPorts: false,
      CapDrop: ['NET_RAW', 'MKNOD', 'AUDIT_WRITE'],
      SecurityOpt: ['no-new-privileges'],
      NanoCpus: 1.5e9,
      Memory: 256 * 2 ** 20,
      Mounts: [{ Type: 'bind', Source: '/h', Target: '/w', ReadOnly: true }],
    });
    expect(o.HostConfig?.Binds).toBeUndefined();
  });

  it('binds the inbox folder read-only when given one', () => {
    const spec = { name: 'demo', image: null, user: null, mounts: [], env: {}, options: {}, labels: {}, resourceName: 'sdesk-abc-demo' };
    expect(containerCreateOptions(spec, 'img', '/data/inbox/0123456789ab').HostConfig?.Binds).toEqual([
      `/data/inbox/0123456789ab:${INBOX_SANDBOX_DIR}:ro`,
    ]);
  });
});
