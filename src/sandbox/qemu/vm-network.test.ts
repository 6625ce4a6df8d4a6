import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { guestProxyEnv, netdevPolicySuffix, readVmNetwork, vmNetworkFile, writeVmNetwork } from './vm-network.js';

describe('a VM’s network policy on its QEMU command line', () => {
  it('open adds nothing; offline restricts; allow restricts and forwards 10.0.2.100:3128 to the proxy socket', () => {
    expect(netdevPolicySuffix({ mode: 'open', socket: null })).toBe('');
    expect(netdevPolicySuffix({ mode: 'offline', socket: null })).toBe(',restrict=on');
    expect(netdevPolicySuffix({ mode: 'allow', socket: '/d/a,b/proxy.sock' })).toBe(
      ',restrict=on,guestfwd=tcp:10.0.2.100:3128-cmd:socat - UNIX-CONNECT:/d/a,,b/proxy.sock',
    );
    expect(guestProxyEnv({ mode: 'allow', socket: '/x' })).toContain('HTTP_PROXY=http://10.0.2.100:3128');
    expect(guestProxyEnv({ mode: 'offline', socket: null })).toEqual([]);
  });

  it('is kept in the VM folder; none means open, an unreadable one fails closed (offline)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vmnet-'));
    try {
      expect(readVmNetwork(dir).mode).toBe('open');
      writeVmNetwork(dir, { mode: 'allow', socket: '/s' });
      expect(readVmNetwork(dir)).toEqual({ mode: 'allow', socket: '/s' });
      writeFileSync(vmNetworkFile(dir), '{not json');
      expect(readVmNetwork(dir).mode).toBe('offline');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
