import { spawn } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxDeskError } from '../../shared/errors.js';
import type { ImageTaskEvent } from '../../shared/image-types.js';
import { projectRoot } from '../../platform/project-root.js';
import { readJson } from './vm-files.js';
import { imageSearchPath } from './vm-image.js';

/**
 * The one interface to the VM image builder (resources/vm/): `build-vm-image.sh NAME OUTDIR`, which
 * prints `[build-… +Ns] stage i/N: …` lines and exits non-zero on failure.
 */
export const VM_IMAGE_BUILD_SCRIPT = 'resources/vm/build-vm-image.sh';
/** The names that script builds. */
export const BUILDABLE_VM_IMAGES = ['debian-test', 'debian-desktop'] as const;

export interface VmImageEntry {
  name: string;
  dir: string;
  sizeBytes: number;
  createdAt: string | null;
  /** image.json's `desktop` (true: the desktop's parts, Chromium included); null when it does not say. */
  desktop: boolean | null;
}

/** Size on disk of a file or a folder (allocated blocks: a sparse disk counts what it uses). */
export function diskUsage(path: string): number {
  const st = statSync(path);
  if (!st.isDirectory()) return st.blocks * 512;
  let total = 0;
  for (const e of readdirSync(path)) total += diskUsage(join(path, e));
  return total;
}

/** Every named VM image in the qemu backend's search path; a name found twice is the first one (as resolveBaseImage does). */
export function listVmImages(dataDir: string): VmImageEntry[] {
  const seen = new Map<string, VmImageEntry>();
  for (const root of imageSearchPath(dataDir)) {
    let names: string[];
    try {
      names = readdirSync(root);
    } catch {
      continue;
    }
    for (const name of names.sort()) {
      const dir = join(root, name);
      const file = join(dir, 'image.json');
      if (seen.has(name) || !existsSync(file)) continue;
      const meta = readJson<{ built_at?: string; desktop?: unknown }>(file);
      seen.set(name, {
        name,
        dir,
        sizeBytes: diskUsage(dir),
        createdAt: typeof meta?.built_at === 'string' ? meta.built_at : statSync(file).mtime.toISOString(),
        desktop: typeof meta?.desktop === 'boolean' ? meta.desktop : null,
      });
    }
  }
  return [...seen.values()];
}

/** Removes a named VM image's directory (the caller has checked that no VM uses it). */
export function removeVmImage(entry: VmImageEntry): void {
  try {
    rmSync(entry.dir, { recursive: true });
  } catch (err) {
    throw new SandboxDeskError('refused', `could not remove VM image ${entry.name} (${entry.dir}): ${(err as Error).message}`, {
      hint: (err as NodeJS.ErrnoException).code === 'EACCES' ? 'it belongs to root: remove it as root' : 'check the folder',
    });
  }
}

const STAGE_RE = /^\[build-[^\]]*\] stage (\d+)\/(\d+): (.*)$/;

/** A line of the builder's output as an event: a stage is a step, anything else is output. */
export function vmBuildEvent(line: string): Omit<ImageTaskEvent, 'at'> {
  const m = STAGE_RE.exec(line);
  if (m) return { kind: 'step', text: m[3]!, step: Number(m[1]), total: Number(m[2]) };
  return { kind: 'output', text: line };
}

export interface VmBuildOptions {
  name: string;
  outDir: string;
  signal?: AbortSignal;
  onEvent: (e: Omit<ImageTaskEvent, 'at'>) => void;
  /** The builder (tests give another); default the project's VM_IMAGE_BUILD_SCRIPT. */
  script?: string;
}

/**
 * Runs the VM image builder for `name` into `outDir`, one event per line of its output; cancelled by
 * ending its whole process group (the builder makes the next build start clean). Fails with the
 * builder's last lines.
 */
export function buildVmImage(opts: VmBuildOptions): Promise<void> {
  if (!(BUILDABLE_VM_IMAGES as readonly string[]).includes(opts.name))
    return Promise.reject(
      new SandboxDeskError('invalid_input', `no VM image recipe named ${opts.name}`, {
        hint: `the builder makes ${BUILDABLE_VM_IMAGES.join(' and ')}; for a Docker image give --tag and a folder`,
      }),
    );
  const script = opts.script ?? join(projectRoot(), VM_IMAGE_BUILD_SCRIPT);
  if (!existsSync(script))
    return Promise.reject(new SandboxDeskError('not_found', `the VM image builder ${script} is not in this installation`));
  return new Promise((resolve, reject) => {
    // Its own process group, so a cancel ends debootstrap and qemu-img too, not only bash.
    const child = spawn('bash', [script, opts.name, opts.outDir], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const tail: string[] = [];
    let partial = '';
    const onData = (c: Buffer): void => {
      const lines = (partial + c.toString('utf8')).split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines) {
        if (!l.trim()) continue;
        tail.push(l);
        if (tail.length > 30) tail.shift();
        opts.onEvent(vmBuildEvent(l));
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const kill = (): void => {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // already gone
      }
    };
    opts.signal?.addEventListener('abort', kill, { once: true });
    child.on('error', (e) => reject(new SandboxDeskError('internal', `could not run ${script}: ${e.message}`)));
    child.on('close', (code, sig) => {
      opts.signal?.removeEventListener('abort', kill);
      if (partial.trim()) opts.onEvent(vmBuildEvent(partial));
      if (opts.signal?.aborted) return reject(new SandboxDeskError('cancelled', `the build of VM image ${opts.name}: cancelled`));
      if (code === 0) return resolve();
      reject(
        new SandboxDeskError(
          'build_failed',
          `the build of VM image ${opts.name} failed (${sig ?? `exit ${code}`}):\n${tail.map((l) => `  | ${l}`).join('\n')}`,
          {
            hint: 'see the lines above; the next build starts clean',
          },
        ),
      );
    });
  });
}
