import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxDeskError } from '../../shared/errors.js';
import type { Mount } from '../provider.js';
import { kill } from './qemu-process.js';
import type { VmFiles } from './vm-files.js';

/**
 * Host folders shared into a VM with virtiofs: one virtiofsd per folder (QEMU's own, shipped in
 * qemu-system-common), a vhost-user-fs device per share, and a mount by tag in the guest at every
 * boot. The Debian cloud kernel has virtiofs but no 9p, so this is the one way in.
 */
export const VIRTIOFSD = '/usr/lib/qemu/virtiofsd';

export interface Share {
  tag: string;
  hostPath: string;
  sandboxPath: string;
  socket: string;
  log: string;
}

export function sharesFor(files: VmFiles, mounts: readonly Mount[]): Share[] {
  const sockets = join(files.qmpSocket, '..');
  return mounts.map((m, i) => ({
    tag: `sdesk${i}`,
    hostPath: m.hostPath,
    sandboxPath: m.sandboxPath,
    socket: join(sockets, `vfs${i}.sock`),
    log: join(files.dir, `virtiofsd-${i}.log`),
  }));
}

/** Checked at create, so a bad mount never makes a VM that cannot boot. */
export function checkMounts(mounts: readonly Mount[]): void {
  if (mounts.length === 0) return;
  if (!existsSync(VIRTIOFSD)) {
    throw new SandboxDeskError('backend_unavailable', `sharing folders with a VM needs ${VIRTIOFSD}, which is not installed here`, {
      hint: 'install qemu-system-common (`npm run setup` does)',
    });
  }
  if (process.getuid?.() !== 0) {
    throw new SandboxDeskError(
      'refused',
      "sharing folders with a VM needs root here: QEMU 7.2's virtiofsd sandboxes itself with namespaces that need it",
      { hint: 'run Sandbox Desk as root for VMs with --mount, or copy files in with `sandbox-desk exec`' },
    );
  }
  for (const m of mounts) {
    if (m.readOnly) {
      throw new SandboxDeskError(
        'invalid_input',
        `--mount ${m.hostPath}:${m.sandboxPath}:ro: read-only shares are not supported for VMs (this virtiofsd has no read-only mode, and the guest's root could remount a share writable)`,
        {
          hint: 'share it writable, or use a docker sandbox for a read-only bind mount',
        },
      );
    }
    let dir = false;
    try {
      dir = statSync(m.hostPath).isDirectory();
    } catch {
      dir = false;
    }
    if (!dir)
      throw new SandboxDeskError(
        'invalid_input',
        `--mount ${m.hostPath}:${m.sandboxPath}: ${m.hostPath} is not a directory on this machine`,
        { hint: 'VMs share host folders; create it first' },
      );
    // The guest's mount list is tab- and line-separated.
    if (/[\t\n\r]/.test(m.sandboxPath))
      throw new SandboxDeskError(
        'invalid_input',
        `--mount ${JSON.stringify(m.sandboxPath)}: a VM mount path cannot contain tabs or line breaks`,
      );
  }
}

/** What the guest mounts at every boot (see the seed's per-boot mount script). */
export function guestMounts(shares: readonly Share[]): { tag: string; path: string }[] {
  return shares.map((s) => ({ tag: s.tag, path: s.sandboxPath }));
}

/** QEMU's side: guest memory shareable with virtiofsd, and one vhost-user-fs device per share. */
export function virtiofsQemuArgs(shares: readonly Share[], memoryMiB: number): string[] {
  if (shares.length === 0) return [];
  const opt = (p: string): string => p.replace(/,/g, ',,');
  return [
    '-object',
    `memory-backend-memfd,id=mem,size=${memoryMiB}M,share=on`,
    '-numa',
    'node,memdev=mem',
    ...shares.flatMap((s, i) => [
      '-chardev',
      `socket,id=vfs${i},path=${opt(s.socket)}`,
      '-device',
      `vhost-user-fs-pci,chardev=vfs${i},tag=${s.tag}`,
    ]),
  ];
}

/**
 * Starts one virtiofsd per share and waits for its socket. Each serves one QEMU connection and exits
 * when that QEMU does; detached, so a VM outlives the app that started it. Returns the pids, to end
 * them when the boot fails before QEMU connects.
 */
export async function startShares(shares: readonly Share[]): Promise<number[]> {
  const pids: number[] = [];
  try {
    for (const s of shares) {
      rmSync(s.socket, { force: true });
      const log = openSync(s.log, 'w');
      const child = spawn(VIRTIOFSD, [`--socket-path=${s.socket}`, '-o', `source=${s.hostPath}`, '-o', 'cache=auto'], {
        detached: true,
        stdio: ['ignore', 'ignore', log],
      });
      closeSync(log);
      child.unref();
      if (!child.pid) throw new SandboxDeskError('backend_unavailable', `could not start ${VIRTIOFSD}`);
      pids.push(child.pid);
      let exited: number | null = null;
      child.once('exit', (code) => (exited = code ?? -1));
      const deadline = Date.now() + 10_000;
      while (!existsSync(s.socket)) {
        if (exited !== null || Date.now() > deadline) {
          const why =
            readFileSync(s.log, 'utf8').trim().split('\n').slice(-3).join('; ') ||
            (exited !== null ? `exit ${exited}` : 'no socket after 10 s');
          throw new SandboxDeskError('backend_unavailable', `could not share ${s.hostPath} with the VM: virtiofsd ${why}`, {
            hint: `see ${s.log}`,
          });
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    return pids;
  } catch (err) {
    stopShares(pids);
    throw err;
  }
}

export function stopShares(pids: readonly number[]): void {
  for (const pid of pids) kill(pid, 'SIGTERM');
}
