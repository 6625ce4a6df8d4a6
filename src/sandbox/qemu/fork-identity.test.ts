import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { forkIdentityScript, IDENTITY_PROBE, MAC_RE, randomMac, vmHostname } from './fork-identity.js';

describe('fork identity', () => {
  it('MACs are in QEMU’s 52:54:00 range and differ between forks', () => {
    const macs = Array.from({ length: 20 }, randomMac);
    expect(macs.every((m) => MAC_RE.test(m) && m.startsWith('52:54:00:'))).toBe(true);
    expect(new Set(macs).size).toBeGreaterThan(1);
  });

  it('hostnames are what provision makes: sdesk-NAME, DNS-safe', () => {
    expect(vmHostname('Fork_1')).toBe('sdesk-fork-1');
  });

  it('the script is valid shell, takes the private key from stdin and quotes every value', () => {
    const script = forkIdentityScript({
      hostname: 'sdesk-f-1',
      mac: '52:54:00:01:02:03',
      hostPublicKey: 'ssh-ed25519 AAAAC3 sdesk-vm-f-1\n',
    });
    expect(spawnSync('sh', ['-n', '-c', script]).status).toBe(0);
    expect(spawnSync('sh', ['-n', '-c', IDENTITY_PROBE]).status).toBe(0);
    expect(script).toContain("printf '%s\\n' 'ssh-ed25519 AAAAC3 sdesk-vm-f-1' | sudo -n tee $k.pub");
    expect(script).toContain('sudo -n ip link set dev "$i" address 52:54:00:01:02:03');
    expect(script).toContain('cat > $k.sdesk-new');
    expect(script.trim().split('\n').at(-1)).toBe('echo identity-ok');
  });
});
