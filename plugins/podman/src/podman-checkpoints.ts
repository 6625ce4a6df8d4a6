import type {
  PluginContext,
  CheckpointArtifact,
  CheckpointCapability,
  CheckpointSpec,
  LifecycleContext,
  ProvisionResult,
  ProvisionSpec,
  SandboxRef,
} from '../../../src/sandbox/plugin-api.js';

/** What the provider lends its checkpoints: the podman runner and its one container create. */
export interface PodmanOps {
  readonly ctx: PluginContext;
  podman(args: string[], timeoutMs?: number): Promise<{ code: number | null; stdout: string; stderr: string }>;
  fail(what: string, r: { code: number | null; stderr: string }): Error;
  id(ref: SandboxRef): string;
  createContainer(spec: ProvisionSpec, image: string): Promise<string>;
}

/** Local only: podman stores it as localhost/sandbox-desk/checkpoint:<id>; nothing pushes it. */
const REPO = 'localhost/sandbox-desk/checkpoint';

/**
 * The podman plugin's checkpoints, to prove the capability crosses the plugin boundary: the filesystem
 * through `podman commit` (labelled, tag = the checkpoint id), restore and fork recreate the container
 * from it with the provider's one create (same name, labels, mounts, hardening), pause through
 * `podman pause`. Memory (CRIU) is not offered: rootful podman could, but the app's restore recreates
 * the container, which a CRIU restore does not do.
 */
export class PodmanCheckpoints implements CheckpointCapability {
  constructor(private readonly p: PodmanOps) {}

  async memorySupport(): Promise<{ supported: boolean; reason?: string }> {
    return {
      supported: false,
      reason: 'the podman plugin saves the disk only (podman commit); CRIU memory checkpoints are not implemented',
    };
  }

  async checkpoint(ref: SandboxRef, spec: CheckpointSpec, ctx?: LifecycleContext): Promise<CheckpointArtifact> {
    if (spec.memory) throw this.p.ctx.error('unsupported', (await this.memorySupport()).reason!, { hint: 'checkpoint without --memory' });
    const id = this.p.id(ref);
    const info = await this.p.podman([
      'inspect',
      '--type',
      'container',
      '--format',
      '{{.Name}}|{{json .Config.Labels}}|{{.State.Status}}',
      id,
    ]);
    if (info.code !== 0) throw this.p.fail('inspect', info);
    const [name, labels, status] = info.stdout.trim().split('|');
    ctx?.progress?.({ step: 'commit', message: `podman commit to ${REPO}:${spec.id}` });
    const image = `${REPO}:${spec.id}`;
    const changes = Object.entries({ ...spec.labels, 'io.sandbox-desk.checkpoint': spec.id }).flatMap(([k, v]) => [
      '--change',
      `LABEL ${k}=${v}`,
    ]);
    // --pause: the freezer holds the filesystem still during the commit (a paused one is already still).
    const made = await this.p.podman(['commit', '-q', ...(status === 'paused' ? [] : ['--pause']), ...changes, id, image], 600_000);
    if (made.code !== 0) throw this.p.fail('commit', made);
    const size = await this.p.podman(['image', 'inspect', '--format', '{{.Size}}', image]);
    return {
      ref: image,
      memory: false,
      sizeBytes: size.code === 0 && /^\d+$/.test(size.stdout.trim()) ? Number(size.stdout.trim()) : null,
      details: { containerName: name ?? '', labels: labels ?? '{}' },
    };
  }

  async restore(ref: SandboxRef, artifact: CheckpointArtifact, ctx?: LifecycleContext): Promise<ProvisionResult> {
    await this.mustExist(artifact);
    let name = String(artifact.details?.containerName ?? '');
    let labels: Record<string, string> = parse(artifact.details?.labels);
    if (ref.backendRef) {
      const info = await this.p.podman([
        'inspect',
        '--type',
        'container',
        '--format',
        '{{.Name}}|{{.Image}}|{{json .Config.Labels}}',
        ref.backendRef,
      ]);
      if (info.code === 0) {
        const [n, image, ...l] = info.stdout.trim().split('|');
        name = n || name;
        labels = parse(l.join('|')) ?? labels;
        ctx?.progress?.({ step: 'remove', message: `removing the current container ${name}` });
        const rm = await this.p.podman(['rm', '-f', '-t', '0', ref.backendRef]);
        if (rm.code !== 0) throw this.p.fail('rm', rm);
        await this.removeIfOrphaned(image ?? null);
      }
    }
    if (!name) throw this.p.ctx.error('internal', `checkpoint ${artifact.ref} does not say what its container was named`);
    const spec: ProvisionSpec = {
      name: ref.name,
      image: ref.image,
      user: ref.user,
      mounts: ref.mounts,
      env: ref.env,
      options: ref.options,
      labels,
      resourceName: name,
    };
    return { backendRef: await this.createAndStart(spec, artifact, ctx), user: ref.user, image: ref.image };
  }

  async fork(artifact: CheckpointArtifact, spec: ProvisionSpec, ctx?: LifecycleContext): Promise<ProvisionResult> {
    await this.mustExist(artifact);
    return { backendRef: await this.createAndStart(spec, artifact, ctx), user: spec.user, image: spec.image };
  }

  private async createAndStart(spec: ProvisionSpec, artifact: CheckpointArtifact, ctx?: LifecycleContext): Promise<string> {
    ctx?.progress?.({ step: 'container', message: `creating ${spec.resourceName} from ${artifact.ref}` });
    const id = await this.p.createContainer(spec, artifact.ref);
    const started = await this.p.podman(['start', id]);
    if (started.code !== 0) {
      await this.p.podman(['rm', '-f', '-t', '0', id]);
      throw this.p.fail('start', started);
    }
    return id;
  }

  private async mustExist(artifact: CheckpointArtifact): Promise<void> {
    const v = await this.verify(artifact);
    if (!v.ok) throw this.p.ctx.error('not_found', `checkpoint image ${artifact.ref} is broken: ${v.detail}`);
  }

  async verify(artifact: CheckpointArtifact): Promise<{ ok: boolean; detail?: string }> {
    const r = await this.p.podman(['image', 'exists', artifact.ref]);
    return r.code === 0 ? { ok: true } : { ok: false, detail: `image ${artifact.ref} was removed outside Sandbox Desk` };
  }

  /**
   * Never `podman image rm -f`: podman's force removes the containers using the image — a restored or
   * forked sandbox. An image still in use is untagged instead, and goes with its last container
   * (`removeIfOrphaned`, called by the provider's remove).
   */
  async removeCheckpoint(artifact: CheckpointArtifact): Promise<void> {
    const r = await this.p.podman(['image', 'rm', artifact.ref]);
    if (r.code === 0 || /image not known|no such image/i.test(r.stderr)) return;
    if (/in use|being used|has dependent/i.test(r.stderr)) {
      const u = await this.p.podman(['untag', artifact.ref, artifact.ref]);
      if (u.code === 0) return;
      throw this.p.fail('untag', u);
    }
    throw this.p.fail('image rm', r);
  }

  /** After a container went: its image, when it is an untagged checkpoint image no other container uses. */
  async removeIfOrphaned(imageId: string | null): Promise<void> {
    if (!imageId) return;
    const i = await this.p.podman([
      'image',
      'inspect',
      '--format',
      '{{index .Labels "io.sandbox-desk.checkpoint"}}|{{len .RepoTags}}',
      imageId,
    ]);
    const [label, tags] = i.stdout.trim().split('|');
    if (i.code !== 0 || !label || label === '<no value>' || tags !== '0') return;
    await this.p.podman(['image', 'rm', imageId]);
  }

  async pause(ref: SandboxRef): Promise<void> {
    const r = await this.p.podman(['pause', this.p.id(ref)]);
    if (r.code !== 0) throw this.p.fail('pause', r);
  }

  async resume(ref: SandboxRef): Promise<void> {
    const r = await this.p.podman(['unpause', this.p.id(ref)]);
    if (r.code !== 0) throw this.p.fail('unpause', r);
  }
}

function parse(v: unknown): Record<string, string> {
  if (typeof v !== 'string') return {};
  try {
    const o = JSON.parse(v) as unknown;
    return o && typeof o === 'object' ? (o as Record<string, string>) : {};
  } catch {
    return {};
  }
}
