import type Docker from 'dockerode';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxDeskError } from '../../shared/errors.js';
import type {
  CheckpointArtifact,
  CheckpointCapability,
  CheckpointSpec,
  LifecycleContext,
  ProvisionResult,
  ProvisionSpec,
  SandboxRef,
} from '../provider.js';
import { containerCreateOptions } from './docker-container-spec.js';
import { engineMessage, statusOf } from './docker-errors.js';

/** Where checkpoint images live: local only (nothing ever pushes this repository). */
export const CHECKPOINT_REPO = 'sandbox-desk/checkpoint';
export const CHECKPOINT_LABEL = 'io.sandbox-desk.checkpoint';
/**
 * Written into the checkpoint's folder before the commit is asked for: which container is being
 * committed and whether the commit paused it. The engine finishes a commit whose caller was killed, so
 * whoever cleans up after that caller waits for the commit to end before removing what it made.
 */
export const PENDING_COMMIT_FILE = 'pending-commit.json';
/** How long a cleanup waits for an abandoned commit to end; a later one removes what it made by its label. */
const COMMIT_END_WAIT_MS = 60_000;

interface PendingCommit {
  image: string;
  container: string;
  /** The container ran unpaused, so it is paused exactly while the commit runs. */
  pausedByCommit: boolean;
}

export interface DockerCheckpointDeps {
  docker: Docker;
  /** The provider's engine-call wrapper ("engine down" reads the same everywhere). */
  call<T>(fn: () => Promise<T>): Promise<T>;
  /** true when the engine runs on this machine (a local socket): only then can a local criu binary mean anything. */
  localEngine: boolean;
  /** The inbox folder of a container to be made (docker-inbox.ts), made ready; undefined: no inbox. */
  inboxDir?(resourceName: string): string | undefined;
}

/**
 * Docker checkpoints: the filesystem through `docker commit` to a local image per checkpoint (tag = the
 * checkpoint id, labelled ours); restore and fork recreate a container from it with the provisioned
 * container's own create options (docker-container-spec.ts). Pause/resume is the cgroup freezer
 * (`docker pause`). Memory (CRIU, `docker checkpoint create`) needs an engine with experimental features
 * and criu installed; where either is missing, `memorySupport` says which and `--memory` is refused.
 */
export class DockerCheckpoints implements CheckpointCapability {
  constructor(private readonly d: DockerCheckpointDeps) {}

  async memorySupport(): Promise<{ supported: boolean; reason?: string }> {
    const info = (await this.d.call(() => this.d.docker.info())) as { ExperimentalBuild?: boolean; ServerVersion?: string };
    const missing: string[] = [];
    if (!info.ExperimentalBuild)
      missing.push(
        `the Docker engine ${info.ServerVersion ?? ''} runs without experimental features (docker checkpoint needs "experimental": true in daemon.json)`.replace(
          '  ',
          ' ',
        ),
      );
    if (this.d.localEngine && !(await hasCriu())) missing.push('criu is not installed (Debian: apt-get install criu)');
    // Even with both, a restore of CRIU memory into a recreated container (our restore path) is not
    // something this build does yet: it would have to be the same container. Refuse rather than pretend.
    if (missing.length === 0) missing.push('memory checkpoints of Docker sandboxes (CRIU) are not implemented in this build');
    return { supported: false, reason: missing.join('; ') };
  }

  async checkpoint(ref: SandboxRef, spec: CheckpointSpec, ctx: LifecycleContext = {}): Promise<CheckpointArtifact> {
    if (spec.memory) {
      const m = await this.memorySupport();
      throw new SandboxDeskError('unsupported', `docker cannot save sandbox ${ref.name}'s memory: ${m.reason ?? 'no CRIU'}`, {
        hint: 'checkpoint without --memory (the disk only)',
      });
    }
    const container = this.container(ref);
    const info = await this.d
      .call(() => container.inspect())
      .catch((err: unknown) => {
        if (statusOf(err) === 404) throw missing(ref);
        throw err;
      });
    ctx.progress?.({ step: 'commit', message: `committing the container's filesystem to ${CHECKPOINT_REPO}:${spec.id}` });
    const changes = Object.entries({ ...spec.labels, [CHECKPOINT_LABEL]: spec.id }).map(([k, v]) => `LABEL ${k}=${JSON.stringify(v)}`);
    // pause: the freezer holds writes still during the commit, so the image is one consistent moment.
    const paused = info.State.Paused;
    const pending: PendingCommit = { image: `${CHECKPOINT_REPO}:${spec.id}`, container: info.Id, pausedByCommit: !paused };
    writeFileSync(join(spec.dir, PENDING_COMMIT_FILE), JSON.stringify(pending), { mode: 0o600 });
    const made = (await this.d
      .call(() =>
        container.commit({
          repo: CHECKPOINT_REPO,
          tag: spec.id,
          pause: !paused,
          changes,
          comment: `sandbox-desk checkpoint of ${ref.name}`,
        }),
      )
      .catch((err: unknown) => {
        throw new SandboxDeskError('backend_unavailable', `docker commit of sandbox ${ref.name} failed: ${engineMessage(err)}`, {
          hint: 'check free disk space of the Docker engine (`docker system df`)',
          cause: err,
        });
      })) as { Id?: string };
    ctx.progress?.({ step: 'size', message: 'measuring the checkpoint' });
    const image = `${CHECKPOINT_REPO}:${spec.id}`;
    const size = await this.layerSize(image);
    return {
      ref: image,
      memory: false,
      sizeBytes: size,
      details: {
        imageId: made.Id ?? null,
        // What the recreated container is named and labelled even when the old one is gone by then.
        containerName: info.Name.replace(/^\//, ''),
        labels: JSON.stringify(info.Config.Labels ?? {}),
        wasRunning: info.State.Running,
      },
    };
  }

  /** The bytes the commit added (the top layer), not the base image every checkpoint shares. */
  private async layerSize(image: string): Promise<number | null> {
    try {
      const history = (await this.d.call(() => this.d.docker.getImage(image).history())) as Array<{ Size?: number }>;
      return typeof history[0]?.Size === 'number' ? history[0].Size : null;
    } catch {
      return null;
    }
  }

  async restore(ref: SandboxRef, artifact: CheckpointArtifact, ctx: LifecycleContext = {}): Promise<ProvisionResult> {
    await this.mustExist(artifact);
    const details = artifact.details ?? {};
    let name = typeof details.containerName === 'string' ? details.containerName : null;
    let labels = parseLabels(details.labels);
    let removing: Promise<void> = Promise.resolve();
    if (ref.backendRef) {
      const old = this.d.docker.getContainer(ref.backendRef);
      const info = await this.d
        .call(() => old.inspect())
        .catch((err: unknown) => {
          if (statusOf(err) === 404) return null;
          throw err;
        });
      if (info) {
        name = info.Name.replace(/^\//, '');
        labels = info.Config.Labels ?? labels;
        ctx.progress?.({ step: 'remove', message: `replacing the current container ${name}` });
        // Renamed out of the way (instant), so its removal runs while the new one is made under its name.
        await this.d.call(() => old.rename({ name: `${name}-replaced-${Date.now().toString(36)}` }));
        removing = this.d
          .call(async () => void (await old.remove({ force: true, v: true })))
          .then(() => this.removeIfOrphaned(info.Image))
          .catch((err: unknown) => {
            if (statusOf(err) !== 404) throw err;
          });
      }
    }
    if (!name) throw new SandboxDeskError('internal', `checkpoint ${artifact.ref} does not say what its container was named`);
    const [id] = await Promise.all([this.createAndStart(artifact, { ...specOf(ref, name, labels) }, ctx), removing]);
    return { backendRef: id, user: ref.user, image: ref.image };
  }

  async fork(artifact: CheckpointArtifact, spec: ProvisionSpec, ctx: LifecycleContext = {}): Promise<ProvisionResult> {
    await this.mustExist(artifact);
    const id = await this.createAndStart(artifact, spec, ctx);
    return { backendRef: id, user: spec.user, image: spec.image };
  }

  private async createAndStart(artifact: CheckpointArtifact, spec: ProvisionSpec, ctx: LifecycleContext): Promise<string> {
    ctx.progress?.({ step: 'container', message: `creating container ${spec.resourceName} from ${artifact.ref}` });
    const c = await this.d
      .call(() => this.d.docker.createContainer(containerCreateOptions(spec, artifact.ref, this.d.inboxDir?.(spec.resourceName))))
      .catch((err: unknown) => {
        if (statusOf(err) === 409)
          throw new SandboxDeskError('name_taken', `A container named ${spec.resourceName} already exists`, {
            hint: `remove it (\`docker rm -f ${spec.resourceName}\`) or choose another sandbox name`,
          });
        throw new SandboxDeskError('backend_unavailable', `Docker refused to create the container: ${engineMessage(err)}`, { cause: err });
      });
    ctx.progress?.({ step: 'start', message: 'starting the container' });
    try {
      await this.d.call(() => c.start());
    } catch (err) {
      await this.d.call(() => c.remove({ force: true, v: true })).catch(() => undefined);
      throw new SandboxDeskError('backend_unavailable', `Docker could not start the restored container: ${engineMessage(err)}`, {
        cause: err,
      });
    }
    return c.id;
  }

  private async mustExist(artifact: CheckpointArtifact): Promise<void> {
    const v = await this.verify(artifact);
    if (!v.ok)
      throw new SandboxDeskError('not_found', `checkpoint image ${artifact.ref} is broken: ${v.detail}`, {
        hint: 'remove the checkpoint (`sandbox-desk checkpoint rm ID`) and take a new one',
      });
  }

  async verify(artifact: CheckpointArtifact): Promise<{ ok: boolean; detail?: string }> {
    try {
      await this.d.call(() => this.d.docker.getImage(artifact.ref).inspect());
      return { ok: true };
    } catch (err) {
      if (statusOf(err) === 404) return { ok: false, detail: `image ${artifact.ref} was removed outside Sandbox Desk` };
      throw err;
    }
  }

  /**
   * A checkpoint image whose tag went (`checkpoint rm` while a restored or forked container still used
   * it) is only untagged by the engine; once its last container is gone, it is removed here. Not ours
   * (no checkpoint label), still tagged, or still used: left alone.
   */
  async removeIfOrphaned(imageId: string | undefined): Promise<void> {
    if (!imageId) return;
    try {
      const img = await this.d.call(() => this.d.docker.getImage(imageId).inspect());
      if (!img.Config?.Labels?.[CHECKPOINT_LABEL] || (img.RepoTags ?? []).length > 0) return;
      await this.d.call(() => this.d.docker.getImage(imageId).remove());
    } catch {
      // In use by another fork, or already gone: nothing to do.
    }
  }

  async removeCheckpoint(artifact: CheckpointArtifact): Promise<void> {
    const d = artifact.details ?? {};
    if (d.interrupted === true && typeof d.id === 'string') return this.removeInterrupted(d.id, typeof d.dir === 'string' ? d.dir : null);
    await this.removeImage(artifact.ref);
  }

  private async removeImage(ref: string): Promise<void> {
    // force: untags even while forks' containers still use the image (their layers stay until they go).
    await this.d
      .call(() => this.d.docker.getImage(ref).remove({ force: true }))
      .catch((err: unknown) => {
        if (statusOf(err) !== 404) throw err;
      });
  }

  /**
   * After a checkpoint that never returned (its process killed, its operation cancelled): the engine may
   * still be committing, and would make the image after a removal by tag found nothing. So: wait while
   * the commit holds the container paused (bounded), then remove every image labelled with the id.
   */
  private async removeInterrupted(id: string, dir: string | null): Promise<void> {
    const pending = dir ? readPending(dir) : null;
    if (pending?.pausedByCommit) await this.waitUnpaused(pending.container, COMMIT_END_WAIT_MS);
    const images = await this.d.call(() => this.d.docker.listImages({ filters: { label: [`${CHECKPOINT_LABEL}=${id}`] } }));
    for (const img of images) if (onlyCheckpointTags(img.RepoTags, id)) await this.removeImage(img.Id);
    await this.removeImage(`${CHECKPOINT_REPO}:${id}`);
  }

  /** Until the container is not paused (the commit that paused it ended), it is gone, or `ms` passed. */
  private async waitUnpaused(container: string, ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      const info = await this.d.call(() => this.d.docker.getContainer(container).inspect()).catch(() => null);
      if (!info?.State.Paused) return;
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  async removeUnrecorded(labels: Record<string, string>, recorded: (id: string) => boolean): Promise<string[]> {
    const label = [CHECKPOINT_LABEL, ...Object.entries(labels).map(([k, v]) => `${k}=${v}`)];
    const images = await this.d.call(() => this.d.docker.listImages({ filters: { label } }));
    const removed: string[] = [];
    for (const img of images) {
      const id = img.Labels?.[CHECKPOINT_LABEL];
      if (!id || recorded(id) || !onlyCheckpointTags(img.RepoTags, id)) continue;
      // Not forced: an image a container still uses (a fork's) stays; removeIfOrphaned takes it later.
      const gone = await this.d
        .call(() => this.d.docker.getImage(img.Id).remove())
        .then(
          () => true,
          (err: unknown) => statusOf(err) === 404,
        );
      if (gone) removed.push(id);
    }
    return removed;
  }

  async pause(ref: SandboxRef): Promise<void> {
    await this.d
      .call(() => this.container(ref).pause())
      .catch((err: unknown) => {
        if (statusOf(err) === 404) throw missing(ref);
        throw new SandboxDeskError('refused', `Docker could not pause sandbox ${ref.name}: ${engineMessage(err)}`, {
          hint: 'only a running sandbox can be paused',
        });
      });
  }

  async resume(ref: SandboxRef): Promise<void> {
    await this.d
      .call(() => this.container(ref).unpause())
      .catch((err: unknown) => {
        if (statusOf(err) === 404) throw missing(ref);
        throw new SandboxDeskError('refused', `Docker could not resume sandbox ${ref.name}: ${engineMessage(err)}`, {
          hint: 'only a paused sandbox can be resumed',
        });
      });
  }

  private container(ref: SandboxRef): Docker.Container {
    if (!ref.backendRef) throw missing(ref);
    return this.d.docker.getContainer(ref.backendRef);
  }
}

function missing(ref: SandboxRef): SandboxDeskError {
  return new SandboxDeskError('sandbox_missing', `the container of sandbox ${ref.name} is gone`, {
    hint: `remove the sandbox with \`sandbox-desk sandbox rm ${ref.name}\``,
  });
}

function parseLabels(v: unknown): Record<string, string> {
  if (typeof v !== 'string') return {};
  try {
    return JSON.parse(v) as Record<string, string>;
  } catch {
    return {};
  }
}

function specOf(ref: SandboxRef, resourceName: string, labels: Record<string, string>): ProvisionSpec {
  return { name: ref.name, image: ref.image, user: ref.user, mounts: ref.mounts, env: ref.env, options: ref.options, labels, resourceName };
}

/**
 * The image is a checkpoint's own (tagged `sandbox-desk/checkpoint:<id>` or untagged), not an image
 * someone built FROM it (that one inherits the labels, under a tag of its own): only ours are removed.
 */
function onlyCheckpointTags(tags: string[] | null | undefined, id: string): boolean {
  return (tags ?? []).every((t) => t === `${CHECKPOINT_REPO}:${id}` || t === '<none>:<none>');
}

function readPending(dir: string): PendingCommit | null {
  try {
    const p = JSON.parse(readFileSync(join(dir, PENDING_COMMIT_FILE), 'utf8')) as Partial<PendingCommit>;
    return typeof p.container === 'string' && typeof p.image === 'string'
      ? { image: p.image, container: p.container, pausedByCommit: p.pausedByCommit === true }
      : null;
  } catch {
    return null; // never written: the process ended before it asked for a commit
  }
}

function hasCriu(): Promise<boolean> {
  return new Promise((resolve) => execFile('criu', ['--version'], (err) => resolve(!err)));
}
