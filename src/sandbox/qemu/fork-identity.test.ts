import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { forkIdentityScript, IDENTITY_PROBE, MAC_RE, MACHINE_ID_RE, randomMac, randomMachineId, vmHostname } from './fork-identity.js';

/** The root script inside the one `sudo -n sh -c …` (a shell function stands in for sudo and prints it). */
function rootScript(command: string): string {
  const r = spawnSync('sh', ['-c', `sudo() { shift 3; printf '%s' "$1"; }\n${command}`], { encoding: 'utf8' });
  expect(r.status).toBe(0);
  return r.stdout;
}

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
    // One sudo for everything (each costs seconds in a TCG guest), the rest runs as root inside it.
    expect(script.startsWith('sudo -n sh -c ')).toBe(true);
    const root = rootScript(script);
    expect(spawnSync('sh', ['-n', '-c', root]).status).toBe(0);
    expect(root).not.toContain('sudo');
    expect(root).toContain("printf '%s\\n' 'ssh-ed25519 AAAAC3 sdesk-vm-f-1' > $k.pub");
    expect(root).toContain('setsid sh -c "sleep 1; ip link set dev $i address 52:54:00:01:02:03; ip neigh flush dev $i" </dev/null');
    expect(root).toContain('cat > $k.sdesk-new');
    expect(root.trim().split('\n').at(-1)).toBe('echo identity-ok');
  });

  it('a copy also gets its own machine-id and cloud-init instance id; values that are not ids are refused', () => {
    const base = { hostname: 'sdesk-f-1', mac: '52:54:00:01:02:03', hostPublicKey: 'ssh-ed25519 AAAAC3 k' };
    const mid = randomMachineId();
    expect(mid).toMatch(MACHINE_ID_RE);
    expect(randomMachineId()).not.toBe(mid);
    const script = forkIdentityScript({ ...base, machineId: mid, instanceId: 'sdesk-0123456789abcdef' });
    expect(spawnSync('sh', ['-n', '-c', script]).status).toBe(0);
    const root = rootScript(script);
    expect(root).toContain(`printf '%s\\n' ${mid} > /etc/machine-id`);
    expect(root).toContain("printf '%s\\n' sdesk-0123456789abcdef > /var/lib/cloud/data/instance-id");
    expect(() => forkIdentityScript({ ...base, machineId: '$(reboot)' })).toThrow(/not a machine id/);
    expect(() => forkIdentityScript({ ...base, instanceId: 'a;b' })).toThrow(/not a cloud-init instance id/);
  });
});
