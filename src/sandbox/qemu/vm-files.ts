import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { VmOptions } from './vm-options.js';

/**
 * One directory per VM (Lima's layout): the overlay disk, the cloud-init seed, the host key and the
 * known_hosts pinned to it, the serial log, and two small JSON files — what the VM is (vm.json, written
 * once) and how the current boot runs (run.json: pid, accel, port; it lets another app process adopt a
 * running VM instead of starting a second one).
 */
export interface VmFiles {
  dir: string;
  config: string;
  run: string;
  disk: string;
  seed: string;
  serialLog: string;
  pidFile: string;
  hostKey: string;
  knownHosts: string;
  /** Unix sockets live where their path fits the 108-byte limit. */
  qmpSocket: string;
  sshControl: string;
}

/** What a VM is; fixed at creation: its options, plus the base image, the user and the host key alias. */
export interface VmConfig extends Omit<VmOptions, 'desktop' | 'desktopTimeoutS' | 'template'> {
  version: 1;
  /** `--desktop` (absent in VMs made before it): the first boot installs the desktop's packages. */
  desktop?: boolean;
  desktopTimeoutS?: number;
  /** The base image the overlay points at, and how it boots. */
  base: {
    disk: string;
    format: string;
    kernel: string | null;
    initrd: string | null;
    cmdline: string | null;
    name: string | null;
    /** Size and mtime of the base disk at creation: an overlay on a changed base reads garbage. */
    fingerprint?: string;
  };
  user: string;
  /** Used in known_hosts instead of host:port, so the pinned key holds whatever port a boot gets. */
  hostKeyAlias: string;
  /** The NIC's MAC, unique per VM (forks get their own); absent on VMs made before it: QEMU's default. */
  mac?: string;
  /**
   * The guest RAM lives in `ram.raw` in the VM's folder, mapped shared (qemu-argv.ts memoryFile): only
   * a template build's VM, so its memory is saved by copying the file (vm-template.ts).
   */
  ramFile?: boolean;
}

/** How the current (or last) boot runs; rewritten at every start, removed by a clean stop. */
export interface VmRun {
  pid: number;
  /** The process's start time in clock ticks (/proc/PID/stat field 22): a reused pid has another. */
  pidStart: string;
  accel: 'kvm' | 'tcg';
  sshPort: number;
  startedAt: string;
  /**
   * A user's home as measured in this boot (`cd ~ && pwd -P`) by a restore's identity script, which
   * runs anyway: createEnvironment uses it instead of measuring again over another channel.
   */
  home?: { user: string; path: string };
}

const SOCKET_PATH_MAX = 100;

export function vmFiles(dir: string): VmFiles {
  const sockets = join(dir, 'qmp.sock').length <= SOCKET_PATH_MAX ? dir : shortSocketDir(dir);
  return {
    dir,
    config: join(dir, 'vm.json'),
    run: join(dir, 'run.json'),
    disk: join(dir, 'disk.qcow2'),
    seed: join(dir, 'seed.iso'),
    serialLog: join(dir, 'serial.log'),
    pidFile: join(dir, 'qemu.pid'),
    hostKey: join(dir, 'ssh_host_ed25519_key'),
    knownHosts: join(dir, 'known_hosts'),
    qmpSocket: join(sockets, 'qmp.sock'),
    sshControl: join(sockets, 'ssh.ctl'),
  };
}

/** A deterministic short directory for a VM whose own path is too long for a socket. */
function shortSocketDir(dir: string): string {
  const id = createHash('sha256').update(dir).digest('hex').slice(0, 16);
  return join(process.env.XDG_RUNTIME_DIR || tmpdir(), `sdesk-vm-${id}`);
}

export function ensureSocketDir(files: VmFiles): void {
  mkdirSync(join(files.qmpSocket, '..'), { recursive: true, mode: 0o700 });
}

export function readJson<T>(path: string): T | null {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as T;
  } catch {
    return null;
  }
}

/** Written to a temp file and renamed, so a reader never sees half a file. */
export function writeJson(path: string, value: unknown): void {
  writeFileSync(`${path}.tmp`, JSON.stringify(value, null, 2) + '\n', { mode: 0o600 });
  renameSync(`${path}.tmp`, path);
}
