import { existsSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { SandboxDeskError } from '../shared/errors.js';
import type { ImageInfo, ImageTask, ImageTaskEvent } from '../shared/image-types.js';
import type { IDisposable } from '../shared/lifecycle.js';
import { DockerProvider } from '../sandbox/docker/docker-provider.js';
import { engineUnreachable, isUnreachable } from '../sandbox/docker/docker-errors.js';
import { IMAGE_LABELS, normalizeTag, type DockerImages, type DockerImageSummary } from '../sandbox/docker/docker-images.js';
import { readJson } from '../sandbox/qemu/vm-files.js';
import type { QemuProvider } from '../sandbox/qemu/qemu-provider.js';
import { BUILDABLE_VM_IMAGES, buildVmImage, diskUsage, listVmImages, removeVmImage } from '../sandbox/qemu/vm-image-catalog.js';
import type { SandboxRecord } from '../store/sandbox-store.js';
import { ImageTasks } from './image-tasks.js';

/** The label every image built through `image build` carries, so the app lists it as its own. */
export const BUILT_BY_LABEL = 'io.sandbox-desk.built';

export interface ImageServiceDeps {
  dataDir: string;
  instanceId: string;
  sandboxes: () => SandboxRecord[];
  /** The docker backend (the built-in one), or null when this core has none. */
  docker: () => DockerProvider | null;
  /** The qemu backend (its VM templates), or null when this core has none. */
  qemu?: () => QemuProvider | null;
  /** The VM image builder script (tests give another). */
  vmBuildScript?: string;
}

export interface DockerBuildRequest {
  tag: string;
  /** The context folder; absent: the Dockerfile's folder. */
  context?: string;
  /** The Dockerfile (absolute, or relative to the context); absent: `Dockerfile` in the context. */
  file?: string;
}

export interface ImageListing {
  images: ImageInfo[];
  /** What could not be listed and why (e.g. the Docker engine is down: only VM images are shown). */
  warnings: string[];
}

type Listen = { signal?: AbortSignal; onEvent?: (e: ImageTaskEvent) => void };

/**
 * Images as the app shows them: the Docker images it made or its sandboxes use, and the VM images
 * the qemu backend finds by name or that a VM boots from by path — with sizes, users and whether the
 * desktop's parts are there. Builds and pulls run as tasks (ImageTasks): listened to or polled,
 * cancellable. Removal is refused while a sandbox uses the image, naming it.
 */
export class ImageService implements IDisposable {
  readonly tasks = new ImageTasks();

  constructor(private readonly deps: ImageServiceDeps) {}

  private provider(): DockerProvider {
    const p = this.deps.docker();
    if (!p) throw new SandboxDeskError('backend_unavailable', 'this Sandbox Desk has no docker backend');
    return p;
  }

  /** A Docker engine call; "engine down" reads as everywhere else. */
  private async engine<T>(fn: (images: DockerImages) => Promise<T>): Promise<T> {
    const p = this.provider();
    try {
      return await fn(p.images);
    } catch (err) {
      if (isUnreachable(err)) throw engineUnreachable(p.endpoint, err);
      throw err;
    }
  }

  async list(): Promise<ImageListing> {
    const warnings: string[] = [];
    const records = this.deps.sandboxes();
    let docker: ImageInfo[] = [];
    try {
      docker = await this.dockerImages(records);
    } catch (err) {
      warnings.push(`Docker images are not listed: ${err instanceof SandboxDeskError ? err.oneLine() : String(err)}`);
    }
    return { images: [...docker, ...this.vmImages(records)], warnings };
  }

  private async dockerImages(records: SandboxRecord[]): Promise<ImageInfo[]> {
    const [all, usage] = await this.engine((i) => Promise.all([i.list(), i.usage(this.deps.instanceId)]));
    const wanted = new Map<string, string[]>(); // tag → sandboxes whose record names it
    for (const r of records) {
      if (r.backend !== 'docker' || !r.image) continue;
      const t = normalizeTag(r.image);
      wanted.set(t, [...(wanted.get(t) ?? []), r.name]);
    }
    const out: ImageInfo[] = [];
    for (const img of all) {
      const users = new Set(usage.get(img.id) ?? []);
      for (const t of img.tags) for (const n of wanted.get(t) ?? []) users.add(n);
      const ours = img.tags.some((t) => t.startsWith('sandbox-desk/')) || isAppLabelled(img);
      if (!ours && users.size === 0) continue;
      if (img.tags.length === 0 && users.size === 0) continue; // an intermediate layer of a build
      out.push(dockerInfo(img, [...users].sort(), ours ? 'app' : 'used'));
    }
    return out.sort((a, b) => a.ref.localeCompare(b.ref));
  }

  private vmImages(records: SandboxRecord[]): ImageInfo[] {
    const vms = records.filter((r) => r.backend === 'qemu' && r.image);
    const named = listVmImages(this.deps.dataDir).map((e): ImageInfo => ({
      kind: 'vm',
      ref: e.name,
      id: null,
      tags: [],
      sizeBytes: e.sizeBytes,
      createdAt: e.createdAt,
      usedBy: vms.filter((r) => r.image === e.name).map((r) => r.name),
      desktop: e.desktop,
      origin: 'named',
      path: e.dir,
      derivedFrom: null,
    }));
    const names = new Set(named.map((n) => n.ref));
    const byPath = new Map<string, string[]>();
    for (const r of vms) if (!names.has(r.image!) && isAbsolute(r.image!)) byPath.set(r.image!, [...(byPath.get(r.image!) ?? []), r.name]);
    const paths = [...byPath].map(([path, users]): ImageInfo => {
      const st = existsSync(path) ? statSync(path) : null;
      return {
        kind: 'vm',
        ref: path,
        id: null,
        tags: [],
        sizeBytes: st ? diskUsage(path) : 0,
        createdAt: st ? st.mtime.toISOString() : null,
        usedBy: users.sort(),
        desktop: null,
        origin: 'used',
        path,
        derivedFrom: null,
      };
    });
    return [...named, ...paths, ...this.vmTemplates()];
  }

  /** VM templates: nothing depends on their files (a VM gets a copy of the disk), so none is "used by". */
  private vmTemplates(): ImageInfo[] {
    const templates = this.deps.qemu?.()?.templates;
    if (!templates) return [];
    return templates.list().map((t) => ({
      kind: 'vm-template',
      ref: t.meta.ref,
      id: t.meta.imageHash.slice(0, 12),
      tags: [],
      sizeBytes: t.sizeBytes,
      createdAt: t.meta.createdAt,
      usedBy: [],
      desktop: t.meta.options.desktop,
      origin: 'app',
      path: t.dir,
      derivedFrom: t.meta.image,
    }));
  }

  private qemuTemplates() {
    const t = this.deps.qemu?.()?.templates;
    if (!t) throw new SandboxDeskError('backend_unavailable', 'this Sandbox Desk has no qemu backend: VM templates need it');
    return t;
  }

  /** Builds the VM template of an image and options (a boot, then its memory saved), as a task. */
  buildVmTemplate(
    req: { image: string; memory?: number; cpus?: number; desktop?: boolean },
    listen: Listen = {},
  ): { task: ImageTask; done: Promise<ImageTask> } {
    const templates = this.qemuTemplates();
    return this.tasks.start(
      'vm-template',
      req.image,
      async (run) => {
        const meta = await templates.build(
          { image: req.image, memoryMiB: req.memory, cpus: req.cpus, desktop: req.desktop },
          { signal: run.signal, progress: (e) => run.emit({ kind: 'output', text: e.message }) },
        );
        return { ref: meta.ref, id: meta.imageHash.slice(0, 12) };
      },
      listen,
    );
  }

  /** One image with what the engine or image.json says about it. */
  async inspect(ref: string): Promise<ImageInfo & { details: Record<string, unknown> }> {
    const { images } = await this.list();
    const found = findImage(images, ref);
    if (found?.kind === 'vm-template') {
      return { ...found, details: readJson<Record<string, unknown>>(join(found.path!, 'template.json')) ?? {} };
    }
    if (found?.kind === 'vm') {
      return { ...found, details: found.origin === 'named' ? readImageJson(found.path!) : {} };
    }
    const info = await this.engine((i) => i.inspect(found?.id ?? ref));
    if (!info) throw notFound(ref);
    const base =
      found ??
      dockerInfo(
        { id: info.Id, tags: info.RepoTags ?? [], sizeBytes: info.Size, createdAt: info.Created, labels: info.Config?.Labels ?? {} },
        [],
        'used',
      );
    return {
      ...base,
      details: {
        user: info.Config?.User || null,
        workdir: info.Config?.WorkingDir || null,
        os: info.Os,
        architecture: info.Architecture,
        layers: info.RootFS?.Layers?.length ?? null,
        labels: info.Config?.Labels ?? {},
      },
    };
  }

  /** Removes an image; refused while a sandbox uses it (by name). */
  async remove(ref: string): Promise<{ removed: string }> {
    const { images } = await this.list();
    const found = findImage(images, ref);
    if (found && found.usedBy.length) {
      throw new SandboxDeskError('refused', `image ${ref} is used by sandbox ${found.usedBy.join(', ')}`, {
        hint: `remove ${found.usedBy.length > 1 ? 'those sandboxes' : 'that sandbox'} first (\`sandbox-desk sandbox rm ${found.usedBy[0]}\`)`,
      });
    }
    if (found?.kind === 'vm-template') {
      this.qemuTemplates().remove(found.ref);
      return { removed: ref };
    }
    if (found?.kind === 'vm') {
      if (found.origin !== 'named')
        throw new SandboxDeskError('refused', `${ref} is a disk file, not an image the app made; remove it yourself`);
      removeVmImage({ name: found.ref, dir: found.path!, sizeBytes: 0, createdAt: null, desktop: null });
      return { removed: ref };
    }
    await this.engine((i) => i.remove(found?.tags.includes(normalizeTag(ref)) ? normalizeTag(ref) : (found?.id ?? ref)));
    return { removed: ref };
  }

  /** A Docker build from a folder or a Dockerfile, as a task. */
  buildDocker(req: DockerBuildRequest, listen: Listen = {}): { task: ImageTask; done: Promise<ImageTask> } {
    const { context, dockerfile } = buildPaths(req);
    validateTag(req.tag);
    return this.tasks.start(
      'build',
      req.tag,
      async (run) => {
        const { id } = await this.engine((i) =>
          i.build({ context, dockerfile, tag: req.tag, labels: { [BUILT_BY_LABEL]: 'true' }, signal: run.signal, onEvent: run.emit }),
        );
        return { ref: req.tag, id };
      },
      listen,
    );
  }

  /** A VM image by name, through the VM image builder, into this data dir's images folder. */
  buildVm(name: string, listen: Listen = {}): { task: ImageTask; done: Promise<ImageTask> } {
    const outDir = join(this.deps.dataDir, 'images', name);
    return this.tasks.start(
      'vm-build',
      name,
      async (run) => {
        await buildVmImage({ name, outDir, signal: run.signal, onEvent: run.emit, script: this.deps.vmBuildScript });
        return { ref: name, id: null };
      },
      listen,
    );
  }

  /** A pull with per-layer progress; where no registry is reachable the error says so once. */
  pull(ref: string, listen: Listen = {}): { task: ImageTask; done: Promise<ImageTask> } {
    validateTag(ref);
    return this.tasks.start(
      'pull',
      ref,
      async (run) => {
        const { id } = await this.engine((i) => i.pull(ref, run.signal, run.emit));
        return { ref, id };
      },
      listen,
    );
  }

  dispose(): void {
    this.tasks.dispose();
  }
}

export function isBuildableVmName(name: string): boolean {
  return (BUILDABLE_VM_IMAGES as readonly string[]).includes(name);
}

function isAppLabelled(img: DockerImageSummary): boolean {
  return Boolean(img.labels[IMAGE_LABELS.kind] || img.labels[BUILT_BY_LABEL]);
}

function dockerInfo(img: DockerImageSummary, usedBy: string[], origin: ImageInfo['origin']): ImageInfo {
  const labelled = Boolean(img.labels[IMAGE_LABELS.kind]);
  return {
    kind: 'docker',
    ref: img.tags[0] ?? img.id,
    id: img.id,
    tags: img.tags,
    sizeBytes: img.sizeBytes,
    createdAt: img.createdAt,
    usedBy,
    // The app's labels say it (inherited by images built FROM them); an image it knows nothing of: unknown.
    desktop: img.labels[IMAGE_LABELS.displayUser] ? true : labelled ? false : null,
    origin,
    path: null,
    derivedFrom: img.labels[IMAGE_LABELS.derivedFrom] ?? null,
  };
}

/** By ref, any tag (`name` = `name:latest`), or id (full or a 12+ character prefix). */
export function findImage(images: ImageInfo[], ref: string): ImageInfo | undefined {
  const tag = normalizeTag(ref);
  const id = ref.startsWith('sha256:') ? ref : `sha256:${ref}`;
  return (
    images.find((i) => i.ref === ref) ??
    images.find((i) => i.tags.includes(tag)) ??
    (/^(sha256:)?[0-9a-f]{12,64}$/.test(ref) ? images.find((i) => i.id?.startsWith(id)) : undefined)
  );
}

function notFound(ref: string): SandboxDeskError {
  return new SandboxDeskError('image_not_found', `no image ${ref}`, { hint: 'see `sandbox-desk image list`' });
}

function readImageJson(dir: string): Record<string, unknown> {
  return readJson<Record<string, unknown>>(join(dir, 'image.json')) ?? {};
}

const TAG_RE = /^([a-z0-9.-]+(:\d+)?\/)?[a-z0-9]+([._-][a-z0-9]+)*(\/[a-z0-9]+([._-][a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$/;

export function validateTag(tag: string): void {
  if (!TAG_RE.test(tag))
    throw new SandboxDeskError('invalid_input', `${JSON.stringify(tag)} is not a Docker image name`, {
      hint: 'use lowercase letters, digits, . _ - and / with an optional :tag, e.g. my/tool:1',
    });
}

/** The build context and the Dockerfile inside it, from `PATH` and/or `--file`. */
export function buildPaths(req: DockerBuildRequest): { context: string; dockerfile: string } {
  if (!req.context && !req.file)
    throw new SandboxDeskError('invalid_input', 'nothing to build', { hint: 'give a folder with a Dockerfile, or --file DOCKERFILE' });
  const context = resolve(req.context ?? dirname(resolve(req.file!)));
  if (!existsSync(context) || !statSync(context).isDirectory())
    throw new SandboxDeskError('invalid_input', `build context ${context} is not a folder`, {
      hint: 'give a folder that holds a Dockerfile',
    });
  const file = req.file ? resolve(context, req.file) : join(context, 'Dockerfile');
  const rel = relative(context, file);
  if (rel.startsWith('..') || isAbsolute(rel))
    throw new SandboxDeskError('invalid_input', `the Dockerfile ${file} is outside the build context ${context}`, {
      hint: 'put it inside the folder, or give only --file (its folder is then the context)',
    });
  if (!existsSync(file))
    throw new SandboxDeskError('invalid_input', `${file} does not exist`, {
      hint: `give a folder that holds a Dockerfile, or --file PATH (looked for ${basename(file)})`,
    });
  return { context, dockerfile: rel };
}
