/**
 * VM templates on disk, and the decision whether a create can use one (vm-template.ts boots, saves
 * and restores them).
 *
 * A template is a memory checkpoint of a VM booted once from an image with given options: a folder
 * `<data>/qemu/templates/<slug>/` holding what a checkpoint holds (disk.qcow2 — an overlay of the
 * image's disk, memory.bin, known_hosts, checkpoint.json; and ram.raw, the guest RAM as a file, which a
 * restore maps copy-on-write instead of loading it) plus `template.json`, written last: the image
 * it was built from *by content hash*, the options (memory, CPUs, desktop), the user, and a SHA-256 of
 * the disk and memory files, checked before each use (a changed file is corrupt: never loaded).
 *
 * A VM made from a template gets a *copy* of the template's disk (cp --reflink where the filesystem
 * can), not an overlay on it: nothing ever depends on a template's files, so removing or rebuilding
 * one is never refused on behalf of a sandbox.
 */
import type { TemplateDesktop } from './vm-template-desktop.js';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { SandboxDeskError } from '../../shared/errors.js';
import { readJson, writeJson } from './vm-files.js';
import type { VmOptions } from './vm-options.js';

export const TEMPLATE_META = 'template.json';
/** In a VM's own folder: whether it was made from a template, and if not, why. */
export const TEMPLATE_USE = 'template-use.json';
const VERIFIED = 'verified.json';
const HASH_CACHE = 'image-hashes.json';
/** ram.raw: in templates built since the RAM is a file (older ones hold the whole RAM in memory.bin). */
export const TEMPLATE_FILES = ['disk.qcow2', 'memory.bin', 'ram.raw'] as const;
type TemplateFile = (typeof TEMPLATE_FILES)[number];

export interface TemplateOptions {
  memoryMiB: number;
  cpus: number;
  desktop: boolean;
}

/** template.json */
export interface TemplateMeta {
  version: 1;
  /** What `image list` shows and `image rm` takes: `IMAGE@1024m-2cpu[-desktop]`. */
  ref: string;
  /** The image as the create names it: a VM image name, or a disk path. */
  image: string;
  imageHash: string;
  options: TemplateOptions;
  user: string;
  /**
   * The app's SSH public key the guest authorises (`ssh-ed25519 AAAA…`): a template copied from another
   * data dir (another app key) would never let this app in. Absent in templates made before it.
   */
  appKey?: string;
  cpuType: string | null;
  accel: 'kvm' | 'tcg';
  files: Record<Exclude<TemplateFile, 'ram.raw'>, { sha256: string; size: number }> &
    Partial<Record<'ram.raw', { sha256: string; size: number }>>;
  /** Built with --desktop: the desktop running in the saved memory (absent: none runs there). */
  desktop?: TemplateDesktop;
  createdAt: string;
  buildSeconds: number;
}

/** template-use.json: `pending` until the first start restores it (or boots cold and says why). */
export type TemplateUse =
  /** instanceId: the one the VM's seed carries, given to the restored guest too. */
  | { state: 'pending'; ref: string; dir: string; imageHash: string; instanceId: string }
  /** phases: milliseconds per step of the restore (phase-timer.ts), where its time went. */
  /**
   * desktop: the template's running desktop, restored with the memory, to be handed to the desktop
   * service at the create (desktopTaken: how that went, said by `inspect`).
   */
  | {
      state: 'used';
      ref: string;
      restoreSeconds: number;
      phases?: Record<string, number>;
      desktop?: TemplateDesktop;
      desktopTaken?: { ok: true; cookie: string } | { ok: false; reason: string };
    }
  | { state: 'cold'; reason: string };

export interface TemplateEntry {
  meta: TemplateMeta;
  dir: string;
  sizeBytes: number;
}

export const templatesRoot = (qemuRoot: string): string => join(qemuRoot, 'templates');

export function templateRef(image: string, o: TemplateOptions): string {
  return `${image}@${o.memoryMiB}m-${o.cpus}cpu${o.desktop ? '-desktop' : ''}`;
}

/** A folder name for a template: readable, and unique per image (a path's name plus a hash of the path). */
export function templateSlug(image: string, o: TemplateOptions): string {
  const name = basename(image)
    .replace(/[^A-Za-z0-9_.-]/g, '-')
    .slice(0, 40);
  const pathTag = image.includes('/') ? `-${createHash('sha256').update(image).digest('hex').slice(0, 8)}` : '';
  return `${name}${pathTag}--${o.memoryMiB}m-${o.cpus}cpu${o.desktop ? '-desktop' : ''}`;
}

function usedBytes(path: string): number {
  try {
    const st = statSync(path);
    return Math.min(st.size, st.blocks * 512);
  } catch {
    return 0;
  }
}

/** Every complete template (a folder with template.json); half-made ones (a build that died) are skipped. */
export function listTemplates(qemuRoot: string): TemplateEntry[] {
  const root = templatesRoot(qemuRoot);
  if (!existsSync(root)) return [];
  const out: TemplateEntry[] = [];
  for (const name of readdirSync(root).sort()) {
    const dir = join(root, name);
    const meta = readJson<TemplateMeta>(join(dir, TEMPLATE_META));
    if (meta?.version !== 1) continue;
    out.push({ meta, dir, sizeBytes: TEMPLATE_FILES.reduce((n, f) => n + usedBytes(join(dir, f)), 0) });
  }
  return out;
}

export function sha256File(path: string): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const h = createHash('sha256');
    createReadStream(path)
      .on('data', (c) => h.update(c))
      .on('error', reject)
      .on('end', () => resolvePromise(h.digest('hex')));
  });
}

/** Any write to the file changes one of these (ctime cannot be set back by a user). */
function statKey(path: string): string | null {
  try {
    const st = statSync(path);
    return `${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.ino}`;
  } catch {
    return null;
  }
}

/**
 * The image's content hash: SHA-256 over its disk, kernel and initrd. Hashing a disk takes seconds,
 * so the hash is remembered per file and recomputed only when the file was written since.
 */
export async function imageHash(qemuRoot: string, base: { disk: string; kernel: string | null; initrd: string | null }): Promise<string> {
  const root = templatesRoot(qemuRoot);
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const cachePath = join(root, HASH_CACHE);
  const cache = readJson<Record<string, { key: string; sha256: string }>>(cachePath) ?? {};
  const whole = createHash('sha256');
  for (const path of [base.disk, base.kernel, base.initrd]) {
    if (!path) continue;
    const key = statKey(path);
    if (key === null) throw new SandboxDeskError('image_not_found', `the VM image's file ${path} is gone`);
    let sha = cache[path]?.key === key ? cache[path].sha256 : null;
    if (!sha) {
      sha = await sha256File(path);
      cache[path] = { key, sha256: sha };
    }
    whole.update(`${basename(path)}:${sha}\n`);
  }
  writeJson(cachePath, cache);
  return whole.digest('hex');
}

/**
 * The template's disk and memory are the bytes template.json's SHA-256 names. A full hash of a memory
 * file takes a second or two, so a verified file's stat is remembered (verified.json) and the hash is
 * recomputed only when the file was written since. Returns the problem, or null when all is well.
 */
export async function verifyTemplateFiles(dir: string, meta: TemplateMeta): Promise<string | null> {
  const verified = readJson<Record<string, string>>(join(dir, VERIFIED)) ?? {};
  for (const f of TEMPLATE_FILES) {
    const want = meta.files[f];
    if (!want) continue; // ram.raw of a template from before it
    const path = join(dir, f);
    const key = statKey(path);
    if (key === null) return `its ${f} is gone`;
    if (verified[f] === key) continue;
    if (statSync(path).size !== want.size) return `its ${f} is ${statSync(path).size} bytes, not the ${want.size} it was saved with`;
    if ((await sha256File(path)) !== want.sha256) return `its ${f} does not match the SHA-256 it was saved with (damaged or changed)`;
    verified[f] = key;
  }
  writeJson(join(dir, VERIFIED), verified);
  return null;
}

/**
 * A build has just hashed the files it wrote: remembered as verified, so the first create does not
 * hash a GiB of RAM file again (a later write to a file still changes its stat and forces a hash).
 */
export function markVerified(dir: string, files: readonly string[]): void {
  const verified: Record<string, string> = {};
  for (const f of files) {
    const key = statKey(join(dir, f));
    if (key !== null) verified[f] = key;
  }
  writeJson(join(dir, VERIFIED), verified);
}

// ---- the decision -------------------------------------------------------------------------------

export interface TemplateRequest {
  /** The image as the create names it (the resolved name, or the disk path). */
  image: string;
  imageHash: string;
  opts: VmOptions;
  /** `--option template=off`. */
  off: boolean;
  user: string;
  mountCount: number;
  /** This data dir's app public key (`ssh-ed25519 AAAA…`). */
  appKey: string;
}

export type TemplateDecision =
  | { use: TemplateEntry }
  | {
      use: null;
      reason: string;
      /** A template for exactly this request whose image changed: the caller rebuilds it. */
      stale: TemplateEntry | null;
    };

const describe = (o: TemplateOptions): string => `${o.memoryMiB} MiB, ${o.cpus} CPU${o.cpus > 1 ? 's' : ''}${o.desktop ? ', desktop' : ''}`;

/**
 * Whether a create can be restored from a template, and if not, why — in words the create reports.
 * The template must match the image by content and the options exactly; what a memory state cannot
 * take (host folders, another disk size, another CPU model or user) is refused with the reason.
 */
export function decideTemplate(templates: TemplateEntry[], req: TemplateRequest): TemplateDecision {
  const want: TemplateOptions = { memoryMiB: req.opts.memoryMiB, cpus: req.opts.cpus, desktop: req.opts.desktop };
  const cold = (reason: string, stale: TemplateEntry | null = null): TemplateDecision => ({ use: null, reason, stale });
  if (req.off) return cold('asked to boot cold (--option template=off)');
  const forImage = templates.filter((t) => t.meta.image === req.image);
  if (forImage.length === 0) return cold(`there is no template of ${req.image} (make one: sandbox-desk image template build ${req.image})`);
  const exact = forImage.find((t) => templateRef(req.image, want) === t.meta.ref);
  if (!exact) {
    const have = forImage.map((t) => describe(t.meta.options)).join('; ');
    return cold(
      `the templates of ${req.image} serve ${have}, not ${describe(want)} (make one: sandbox-desk image template build ${req.image} --memory ${want.memoryMiB} --cpus ${want.cpus}${want.desktop ? ' --desktop' : ''})`,
    );
  }
  if (exact.meta.imageHash !== req.imageHash)
    return cold(`the image ${req.image} changed since its template ${exact.meta.ref} was made; it is rebuilt in the background`, exact);
  if (req.mountCount > 0) return cold('the sandbox shares host folders (--mount): a VM restored from memory cannot take virtiofs shares');
  if (req.opts.diskGiB !== null)
    return cold(`--disk ${req.opts.diskGiB} GiB asks for another disk size than the template's (the image's own size)`);
  if (req.opts.accel === 'kvm' && exact.meta.accel !== 'kvm')
    return cold(`--accel kvm was asked, and the template's memory was saved under ${exact.meta.accel.toUpperCase()}`);
  if (req.opts.cpuType !== exact.meta.cpuType)
    return cold(`the template runs CPU model ${exact.meta.cpuType ?? 'the default'}, not ${req.opts.cpuType ?? 'the default'}`);
  if (req.user !== exact.meta.user) return cold(`the template's user is ${exact.meta.user}, not ${req.user}`);
  if (exact.meta.appKey !== undefined && keyPart(exact.meta.appKey) !== keyPart(req.appKey))
    return cold(`template ${exact.meta.ref} authorises another app key (it was made in another data dir); rebuild it here`);
  return { use: exact };
}

/** `ssh-ed25519 AAAA…` without the comment. */
const keyPart = (key: string): string => key.trim().split(/\s+/).slice(0, 2).join(' ');

// ---- one build at a time per template -----------------------------------------------------------

/**
 * Takes the build lock of a template folder (an atomic mkdir holding the builder's pid); a lock whose
 * process is gone is taken over. Returns the release function.
 */
export function lockTemplate(dir: string, ref: string): () => void {
  const lock = `${dir}.building`;
  mkdirSync(dirname(dir), { recursive: true, mode: 0o700 });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      mkdirSync(lock, { mode: 0o700 });
      writeFileSync(join(lock, 'pid'), String(process.pid));
      return () => rmSync(lock, { recursive: true, force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number(readJson<number>(join(lock, 'pid')));
      if (Number.isInteger(pid) && pid > 0 && pidAlive(pid)) {
        throw new SandboxDeskError('refused', `template ${ref} is being built (by process ${pid})`, {
          hint: 'wait until that build ends; `sandbox-desk image list` shows the template when it is ready',
        });
      }
      rmSync(lock, { recursive: true, force: true }); // its builder died: take it over
    }
  }
  throw new SandboxDeskError('refused', `could not take the build lock ${lock}`);
}

export function isBuilding(dir: string): boolean {
  const pid = Number(readJson<number>(join(`${dir}.building`, 'pid')));
  return Number.isInteger(pid) && pid > 0 && pidAlive(pid);
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
