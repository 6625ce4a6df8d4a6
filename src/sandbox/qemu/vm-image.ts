import { existsSync, statSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { SandboxDeskError } from '../../shared/errors.js';
import { runArgv } from '../run-argv.js';
import { readJson, type VmConfig } from './vm-files.js';

/** The image a VM boots from: a disk, and a kernel when it is booted directly (no bootloader inside). */
export type BaseImage = VmConfig['base'] & {
  virtualSize: number;
  /** image.json's `memory_mb`: what the image needs by default (debian-desktop: Chromium); null: no advice. */
  memoryMiB?: number | null;
  /** image.json's `desktop`: the desktop's parts (Chromium included) are in the image. */
  desktop?: boolean;
};

/** The test image `npm run setup` builds; also the default when no --image is given. */
export const DEFAULT_VM_IMAGE = 'debian-test';

/** Where named images are looked up, in order: the data dir's own, then the machine's (built by setup). */
export function imageSearchPath(dataDir: string): string[] {
  const fromEnv = process.env.SANDBOX_DESK_VM_IMAGES?.split(':').filter(Boolean) ?? [];
  return [...fromEnv, join(dataDir, 'images'), '/var/cache/sandbox-desk/images'];
}

interface ImageJson {
  name?: string;
  disk?: string;
  disk_format?: string;
  kernel?: string | null;
  initrd?: string | null;
  cmdline?: string | null;
  desktop?: boolean;
  memory_mb?: number;
}

const NAME_RE = /^[a-z0-9][a-z0-9._-]*$/;

/**
 * Resolves `--image`: a known name (a directory holding image.json, as build-vm-image.sh writes) or a
 * path to a disk image (qcow2 or raw, e.g. a Debian/Ubuntu cloud image, booted through its own
 * bootloader). The disk is checked with `qemu-img info`, so a corrupt file fails here, not at boot.
 */
export async function resolveBaseImage(spec: string, dataDir: string): Promise<BaseImage> {
  const looksLikePath = spec.includes('/') || /\.(qcow2|img|raw)$/i.test(spec);
  if (!looksLikePath && NAME_RE.test(spec)) {
    const dirs = imageSearchPath(dataDir).map((d) => join(d, spec));
    const dir = dirs.find((d) => existsSync(join(d, 'image.json')));
    if (!dir) {
      throw new SandboxDeskError('image_not_found', `no VM image named ${spec} (looked in ${dirs.join(', ')})`, {
        hint:
          spec === DEFAULT_VM_IMAGE
            ? 'build it with `npm run setup`'
            : 'pass the path of a qcow2 or raw disk image, e.g. a Debian or Ubuntu cloud image',
      });
    }
    const meta = readJson<ImageJson>(join(dir, 'image.json'));
    if (!meta?.disk)
      throw new SandboxDeskError('image_invalid', `${join(dir, 'image.json')} is unreadable or names no disk`, {
        hint: 'rebuild the image (`npm run setup`)',
      });
    const at = (p: string | null | undefined): string | null => (p ? resolve(dir, p) : null);
    for (const f of [meta.kernel, meta.initrd]) {
      if (f && !existsSync(resolve(dir, f)))
        throw new SandboxDeskError('image_invalid', `VM image ${spec} is incomplete: ${resolve(dir, f)} is missing`, {
          hint: 'rebuild it (`npm run setup`)',
        });
    }
    const info = await inspectDisk(resolve(dir, meta.disk));
    return {
      name: spec,
      disk: resolve(dir, meta.disk),
      format: info.format,
      virtualSize: info.virtualSize,
      kernel: at(meta.kernel),
      initrd: at(meta.initrd),
      cmdline: meta.cmdline ?? null,
      memoryMiB: typeof meta.memory_mb === 'number' && meta.memory_mb >= 128 ? meta.memory_mb : null,
      desktop: meta.desktop === true,
    };
  }
  const disk = isAbsolute(spec) ? spec : resolve(spec);
  const info = await inspectDisk(disk);
  return { name: null, disk, format: info.format, virtualSize: info.virtualSize, kernel: null, initrd: null, cmdline: null };
}

/** Identifies the bytes of a base disk cheaply: an overlay is only valid over the exact base it was made on. */
export function diskFingerprint(path: string): string | null {
  try {
    const st = statSync(path);
    return `${st.size}:${Math.round(st.mtimeMs)}`;
  } catch {
    return null;
  }
}

/**
 * Refuses to boot an overlay whose base disk is gone or was replaced (e.g. the test image rebuilt by
 * setup): QEMU would boot it, and the guest would see a corrupt filesystem.
 */
export function checkBaseUnchanged(base: { disk: string; fingerprint?: string }): void {
  if (!base.fingerprint) return; // made before fingerprints were recorded
  const now = diskFingerprint(base.disk);
  if (now === null) {
    throw new SandboxDeskError('image_not_found', `this VM's base image ${base.disk} is gone`, {
      hint: 'restore the image, or remove the sandbox and create it again',
    });
  }
  if (now !== base.fingerprint) {
    throw new SandboxDeskError(
      'image_invalid',
      `this VM's base image ${base.disk} changed since the VM was created; its disk is a copy-on-write overlay of the old one and would read as corrupt`,
      {
        hint: 'remove the sandbox and create it again from the new image',
      },
    );
  }
}

/** Format and size of a disk image, or a clear error when it is missing or not an image QEMU can read. */
export async function inspectDisk(path: string): Promise<{ format: string; virtualSize: number }> {
  if (!existsSync(path)) {
    throw new SandboxDeskError('image_not_found', `VM base image ${path} does not exist`, {
      hint: 'pass an existing qcow2 or raw disk image, or --image debian-test',
    });
  }
  if (!statSync(path).isFile()) throw new SandboxDeskError('image_invalid', `VM base image ${path} is not a file`);
  const r = await runArgv(['qemu-img', 'info', '--output=json', path], { timeoutMs: 30_000 });
  const info = parseJson<{ format?: string; 'virtual-size'?: number }>(r.stdout);
  if (r.code !== 0 || !info?.format) {
    throw new SandboxDeskError(
      'image_invalid',
      `VM base image ${path} cannot be read by qemu-img: ${(r.stderr || r.stdout).trim() || `exit ${r.code}`}`,
      {
        hint: 'the file is corrupt or not a disk image; download or build it again',
      },
    );
  }
  // A file QEMU only recognises as raw may be anything (a text file, a truncated download). A raw disk
  // that can boot holds at least a partition table and a filesystem: megabytes, in whole sectors.
  const bytes = statSync(path).size;
  if (info.format === 'raw' && (bytes < 1024 * 1024 || bytes % 512 !== 0)) {
    throw new SandboxDeskError(
      'image_invalid',
      `VM base image ${path} is not a disk image (${bytes} bytes that qemu-img can only read as raw data)`,
      {
        hint: 'pass a qcow2 image, or a raw disk image',
      },
    );
  }
  if (info.format !== 'qcow2' && info.format !== 'raw') {
    throw new SandboxDeskError('image_invalid', `VM base image ${path} is ${info.format}; Sandbox Desk boots qcow2 and raw images`, {
      hint: `convert it: qemu-img convert -O qcow2 ${path} ${path.replace(/\.[^./]*$/, '')}.qcow2`,
    });
  }
  return { format: info.format, virtualSize: info['virtual-size'] ?? 0 };
}

function parseJson<T>(text: string): T | null {
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}
