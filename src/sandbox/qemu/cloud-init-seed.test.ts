import { describe, expect, it } from 'vitest';
import { metaData, userData, type SeedInput } from './cloud-init-seed.js';

const seed: SeedInput = {
  instanceId: 'sdesk-0123',
  hostname: 'sdesk-a',
  user: 'agent',
  authorizedKey: 'ssh-ed25519 AAAAapp sandbox-desk\n',
  hostKey: {
    privateKey: '-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----\n',
    publicKey: 'ssh-ed25519 AAAAhost sdesk-vm-a',
  },
};

describe('cloud-init seed', () => {
  it('gives each VM its own instance id, so cloud-init sets up users and keys for it', () => {
    expect(metaData(seed)).toBe('instance-id: "sdesk-0123"\nlocal-hostname: "sdesk-a"\n');
  });

  it("creates the user with the app's key, sudo and no password login", () => {
    const u = userData(seed);
    expect(u.startsWith('#cloud-config\n')).toBe(true);
    expect(u).toContain('  - name: "agent"\n');
    expect(u).toContain('      - "ssh-ed25519 AAAAapp sandbox-desk"\n');
    expect(u).toContain('sudo: "ALL=(ALL) NOPASSWD:ALL"');
    expect(u).toContain('ssh_pwauth: false');
  });

  it('hands the guest the host key the app pinned, as a YAML block', () => {
    const u = userData(seed);
    expect(u).toContain(
      'ssh_keys:\n  ed25519_private: |\n    -----BEGIN OPENSSH PRIVATE KEY-----\n    abc\n    -----END OPENSSH PRIVATE KEY-----\n',
    );
    expect(u).toContain('  ed25519_public: "ssh-ed25519 AAAAhost sdesk-vm-a"\n');
  });

  it("leaves a per-boot marker under /run and syncs the first boot's writes to disk", () => {
    const u = userData(seed);
    expect(u).toContain('/var/lib/cloud/scripts/per-boot/50-sdesk-ready');
    expect(u).toContain("cut -d' ' -f1 /proc/uptime > /run/sdesk-ready");
    expect(u).toMatch(/\n {6}sync\n/);
  });

  it('lists shared folders as data and mounts them with a per-boot script that runs before the ready marker', () => {
    const u = userData({ ...seed, mounts: [{ tag: 'sdesk0', path: '/home/agent/my work' }] });
    expect(u).toContain('  - path: /etc/sdesk-mounts\n    content: "sdesk0\\t/home/agent/my work\\n"\n');
    expect(u).toContain('/var/lib/cloud/scripts/per-boot/40-sdesk-mounts');
    expect(u.indexOf('40-sdesk-mounts')).toBeLessThan(u.indexOf('50-sdesk-ready'));
    expect(u).toContain('mount -t virtiofs "$tag" "$path"');
    expect(userData(seed)).not.toContain('sdesk-mounts');
  });

  it('--desktop: the install script is a per-boot script that runs before the ready marker', () => {
    const u = userData({
      ...seed,
      desktopInstall: { path: '/var/lib/cloud/scripts/per-boot/45-sdesk-desktop', script: '#!/bin/sh\necho hi\n' },
    });
    expect(u).toContain(
      '  - path: "/var/lib/cloud/scripts/per-boot/45-sdesk-desktop"\n    permissions: "0755"\n    content: |\n      #!/bin/sh\n      echo hi\n',
    );
    expect(u.indexOf('45-sdesk-desktop')).toBeLessThan(u.indexOf('50-sdesk-ready'));
    expect(userData(seed)).not.toContain('45-sdesk-desktop');
  });
});
