import { describe, expect, it } from 'vitest';
import { qemuArgv } from './qemu-argv.js';
import { vmFiles, type VmConfig } from './vm-files.js';

const cfg = (over: Partial<VmConfig> = {}): VmConfig => ({
  version: 1,
  base: {
    name: 'debian-test',
    disk: '/img/disk.qcow2',
    format: 'qcow2',
    kernel: '/img/vmlinuz',
    initrd: '/img/initrd.img',
    cmdline: 'root=/dev/vda rw console=ttyS0',
    ...over.base,
  },
  user: 'agent',
  cpus: 2,
  memoryMiB: 1024,
  diskGiB: null,
  accel: 'auto',
  sshPort: null,
  bootTimeoutS: 300,
  stopTimeoutS: 30,
  kvmProbeS: 10,
  cpuType: null,
  hostKeyAlias: 'sdesk-vm-a',
  ...over,
});

const value = (argv: string[], flag: string): string[] => argv.flatMap((w, i) => (w === flag ? [argv[i + 1]!] : []));

describe('qemuArgv', () => {
  const files = vmFiles('/data/qemu/vms/a');

  it('maps the guest RAM from a file when asked (shared for a template build, copy-on-write for a restore), named as the machine names its RAM', () => {
    expect(qemuArgv(cfg(), files, { accel: 'tcg', sshPort: 1 })).not.toContain('memory-backend=pc.ram');
    const build = qemuArgv(cfg(), files, { accel: 'tcg', sshPort: 1, memoryFile: { path: '/data/a,b/ram.raw', shared: true } });
    expect(value(build, '-object')).toEqual(['memory-backend-file,id=pc.ram,size=1024M,mem-path=/data/a,,b/ram.raw,share=on']);
    expect(value(build, '-machine')).toEqual(['memory-backend=pc.ram']);
    const restore = qemuArgv(cfg(), files, { accel: 'tcg', sshPort: 1, incoming: true, memoryFile: { path: '/t/ram.raw', shared: false } });
    expect(value(restore, '-object')).toEqual(['memory-backend-file,id=pc.ram,size=1024M,mem-path=/t/ram.raw,share=off']);
    // virtiofs brings its own shared memory backend: the two are never combined.
    const share = { tag: 't', socket: '/s.sock', hostPath: '/h', sandboxPath: '/g', readOnly: false } as never;
    expect(() => qemuArgv(cfg(), files, { accel: 'tcg', sshPort: 1, memoryFile: { path: '/r', shared: true } }, [share])).toThrow(
      /shared folders/,
    );
  });

  it('forwards SSH from loopback only, to the port chosen for this boot', () => {
    const argv = qemuArgv(cfg(), files, { accel: 'tcg', sshPort: 40022 });
    expect(value(argv, '-netdev')).toEqual(['user,id=net0,hostfwd=tcp:127.0.0.1:40022-:22']);
  });

  it('daemonizes with a pidfile, a QMP socket and the serial console in a file, and no display', () => {
    const argv = qemuArgv(cfg(), files, { accel: 'tcg', sshPort: 1 });
    expect(argv).toContain('-daemonize');
    expect(value(argv, '-pidfile')).toEqual(['/data/qemu/vms/a/qemu.pid']);
    expect(value(argv, '-qmp')).toEqual(['unix:/data/qemu/vms/a/qmp.sock,server=on,wait=off']);
    expect(value(argv, '-serial')).toEqual(['file:/data/qemu/vms/a/serial.log']);
    expect(value(argv, '-display')).toEqual(['none']);
    expect(argv).not.toContain('-nographic'); // QEMU refuses it with -daemonize
  });

  it('boots the overlay first (/dev/vda) and the seed read-only second', () => {
    const drives = value(qemuArgv(cfg(), files, { accel: 'tcg', sshPort: 1 }), '-drive');
    expect(drives[0]).toMatch(/^file=\/data\/qemu\/vms\/a\/disk\.qcow2,if=virtio,format=qcow2/);
    expect(drives[1]).toBe('file=/data/qemu/vms/a/seed.iso,if=virtio,format=raw,readonly=on');
  });

  it("boots the kernel directly when the image has one, else through the disk's own bootloader", () => {
    const direct = qemuArgv(cfg(), files, { accel: 'tcg', sshPort: 1 });
    expect(value(direct, '-kernel')).toEqual(['/img/vmlinuz']);
    expect(value(direct, '-append')).toEqual(['root=/dev/vda rw console=ttyS0']);
    const cloud = qemuArgv(
      cfg({ base: { name: null, disk: '/x.qcow2', format: 'qcow2', kernel: null, initrd: null, cmdline: null } }),
      files,
      { accel: 'tcg', sshPort: 1 },
    );
    expect(cloud).not.toContain('-kernel');
    expect(cloud).not.toContain('-append');
  });

  it('passes the host CPU under KVM, emulates `max` under TCG, and honours a chosen model', () => {
    expect(value(qemuArgv(cfg(), files, { accel: 'kvm', sshPort: 1 }), '-cpu')).toEqual(['host']);
    expect(value(qemuArgv(cfg(), files, { accel: 'tcg', sshPort: 1 }), '-accel')).toEqual(['tcg']);
    expect(value(qemuArgv(cfg(), files, { accel: 'tcg', sshPort: 1 }), '-cpu')).toEqual(['max']);
    expect(value(qemuArgv(cfg({ cpuType: 'qemu64' }), files, { accel: 'kvm', sshPort: 1 }), '-cpu')).toEqual(['qemu64']);
  });

  it('doubles commas in paths, which QEMU would otherwise read as option separators', () => {
    const argv = qemuArgv(cfg(), vmFiles('/data,x/a'), { accel: 'tcg', sshPort: 1 });
    expect(value(argv, '-drive')[0]).toMatch(/^file=\/data,,x\/a\/disk\.qcow2,/);
  });

  it("gives the NIC the VM's own MAC when it has one (forks never share one), QEMU's default otherwise", () => {
    expect(value(qemuArgv(cfg({ mac: '52:54:00:ab:cd:ef' }), files, { accel: 'tcg', sshPort: 1 }), '-device')).toContain(
      'virtio-net-pci,netdev=net0,mac=52:54:00:ab:cd:ef',
    );
    expect(value(qemuArgv(cfg(), files, { accel: 'tcg', sshPort: 1 }), '-device')).toContain('virtio-net-pci,netdev=net0');
  });

  it('waits for a saved state only when asked (restore/fork of a checkpoint with memory)', () => {
    expect(value(qemuArgv(cfg(), files, { accel: 'tcg', sshPort: 1, incoming: true }), '-incoming')).toEqual(['defer']);
    expect(qemuArgv(cfg(), files, { accel: 'tcg', sshPort: 1 })).not.toContain('-incoming');
  });
});
