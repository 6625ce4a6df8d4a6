import { basename } from 'node:path';
import type { VmConfig, VmFiles } from './vm-files.js';
import { virtiofsQemuArgs, type Share } from './virtiofs.js';

/** QEMU option values are comma-separated; a comma inside a path is written twice. */
const opt = (path: string): string => path.replace(/,/g, ',,');

export interface BootPlan {
  accel: 'kvm' | 'tcg';
  sshPort: number;
  /** The network policy's `-netdev` suffix (vm-network.ts): `,restrict=on` and the proxy's guestfwd. */
  netdevSuffix?: string;
  /**
   * Start paused, waiting for a saved state (`-incoming defer`; the state is then sent with QMP
   * migrate-incoming): a restore or a fork of a checkpoint with memory.
   */
  incoming?: boolean;
  /**
   * Guest RAM mapped from a file instead of anonymous memory. `shared`: the guest writes the file (a
   * template build's VM, whose RAM is then copied as a file rather than migrated page by page); not
   * shared: the file is mapped copy-on-write (a VM restored from a template: its RAM *is* the
   * template's file until the guest writes a page, so nothing is loaded and the file never changes).
   */
  memoryFile?: { path: string; shared: boolean };
}

/**
 * The QEMU command for one boot. Daemonized with a pidfile, so the VM outlives the app process that
 * started it and another one can adopt it; `-display none` because `-nographic` refuses `-daemonize`.
 * The only network path in is SSH forwarded from the host's loopback.
 */
export function qemuArgv(cfg: VmConfig, files: VmFiles, plan: BootPlan, shares: readonly Share[] = []): string[] {
  const argv = [
    'qemu-system-x86_64',
    '-name',
    `sdesk-${opt(basename(files.dir))}`,
    '-accel',
    plan.accel,
    // `max` under TCG emulates what it can; under KVM `host` passes the real CPU through.
    '-cpu',
    cfg.cpuType ?? (plan.accel === 'kvm' ? 'host' : 'max'),
    '-smp',
    String(cfg.cpus),
    '-m',
    String(cfg.memoryMiB),
    '-drive',
    `file=${opt(files.disk)},if=virtio,format=qcow2,discard=unmap`,
    '-drive',
    `file=${opt(files.seed)},if=virtio,format=raw,readonly=on`,
    '-netdev',
    `user,id=net0,hostfwd=tcp:127.0.0.1:${plan.sshPort}-:22${plan.netdevSuffix ?? ''}`,
    '-device',
    cfg.mac ? `virtio-net-pci,netdev=net0,mac=${cfg.mac}` : 'virtio-net-pci,netdev=net0',
    '-device',
    'virtio-rng-pci',
    '-serial',
    `file:${opt(files.serialLog)}`,
    '-qmp',
    `unix:${opt(files.qmpSocket)},server=on,wait=off`,
    '-display',
    'none',
    '-daemonize',
    '-pidfile',
    files.pidFile,
  ];
  argv.push(...virtiofsQemuArgs(shares, cfg.memoryMiB));
  if (plan.memoryFile) {
    // virtiofs needs its own shared memfd backend: the two never meet (a template takes no --mount).
    if (shares.length > 0) throw new Error('a VM with shared folders cannot map its RAM from a file');
    const { path, shared } = plan.memoryFile;
    // Named pc.ram, the name of the machine's own RAM block: the migration stream names RAM blocks, so a
    // checkpoint of a VM restored from a template loads into an ordinary QEMU, and the other way round.
    argv.push(
      '-object',
      `memory-backend-file,id=pc.ram,size=${cfg.memoryMiB}M,mem-path=${opt(path)},share=${shared ? 'on' : 'off'}`,
      '-machine',
      'memory-backend=pc.ram',
    );
  }
  if (plan.incoming) argv.push('-incoming', 'defer');
  if (cfg.base.kernel) {
    argv.push('-kernel', cfg.base.kernel);
    if (cfg.base.initrd) argv.push('-initrd', cfg.base.initrd);
    argv.push('-append', cfg.base.cmdline ?? 'root=/dev/vda rw console=ttyS0');
  }
  return argv;
}
