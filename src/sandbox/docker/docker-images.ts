import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import type Docker from 'dockerode';
import { SandboxDeskError } from '../../shared/errors.js';
import type { ImageTaskEvent } from '../../shared/image-types.js';
import { BuildProgress, JsonLines, pullEvent, type EngineMessage } from './build-progress.js';
import { engineMessage, statusOf } from './docker-errors.js';

type Event = Omit<ImageTaskEvent, 'at'>;

/** The labels the app reads on images. */
export const IMAGE_LABELS = {
  /** What the app made it as: base, desktop, sshd, derived-desktop. */
  kind: 'io.sandbox-desk.image',
  displayUser: 'io.sandbox-desk.display-user',
  derivedFrom: 'io.sandbox-desk.derived-from',
  managed: 'io.sandbox-desk.managed',
} as const;

export interface DockerImageSummary {
  id: string;
  tags: string[];
  sizeBytes: number;
  createdAt: string;
  labels: Record<string, string>;
}

export interface BuildOptions {
  /** The build context folder. */
  context: string;
  /** The Dockerfile, relative to the context (default `Dockerfile`). */
  dockerfile?: string;
  tag: string;
  labels?: Record<string, string>;
  signal?: AbortSignal;
  onEvent: (e: Event) => void;
}

/** Every file under `dir`, relative to it (dockerode packs exactly the entries it is given; .dockerignore filters them). */
export function contextEntries(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

/** A tag as the engine stores it: `name` means `name:latest`. */
export function normalizeTag(ref: string): string {
  const lastSlash = ref.lastIndexOf('/');
  return ref.slice(lastSlash + 1).includes(':') || ref.includes('@') ? ref : `${ref}:latest`;
}

/**
 * Docker images through the Engine API (dockerode): list, inspect, build (the classic builder's JSON
 * stream, cancelled by closing the request), remove, pull. The engine's answers become
 * SandboxDeskErrors that say what to do.
 */
export class DockerImages {
  constructor(private readonly docker: Docker) {}

  async list(): Promise<DockerImageSummary[]> {
    const all = await this.docker.listImages();
    return all.map((i) => ({
      id: i.Id,
      tags: (i.RepoTags ?? []).filter((t) => t !== '<none>:<none>'),
      sizeBytes: i.Size,
      createdAt: new Date(i.Created * 1000).toISOString(),
      labels: i.Labels ?? {},
    }));
  }

  /** The image, or null when the engine has none by that reference. */
  async inspect(ref: string): Promise<Docker.ImageInspectInfo | null> {
    try {
      return await this.docker.getImage(ref).inspect();
    } catch (err) {
      if (statusOf(err) === 404) return null;
      throw err;
    }
  }

  /** Image id → names of the app's sandboxes (containers labelled with this data dir's instance) using it. */
  async usage(instanceId: string): Promise<Map<string, string[]>> {
    const containers = await this.docker.listContainers({ all: true, filters: { label: [`io.sandbox-desk.instance=${instanceId}`] } });
    const by = new Map<string, string[]>();
    for (const c of containers) {
      const name = c.Labels?.['io.sandbox-desk.sandbox'] ?? c.Names?.[0] ?? c.Id;
      by.set(c.ImageID, [...(by.get(c.ImageID) ?? []), name]);
    }
    return by;
  }

  /**
   * Builds and tags `tag`. Each step and each line of its output is an event. A failing step throws
   * `build_failed` with that step's output; an aborted build closes the request, which makes the
   * engine stop the step's container and tag nothing.
   */
  async build(opts: BuildOptions): Promise<{ id: string }> {
    const dockerfile = opts.dockerfile ?? 'Dockerfile';
    const entries = contextEntries(opts.context);
    if (!entries.includes(dockerfile))
      throw new SandboxDeskError('invalid_input', `${join(opts.context, dockerfile)} does not exist`, {
        hint: 'give a folder that holds a Dockerfile, or --file PATH to one',
      });
    const progress = new BuildProgress(opts.onEvent);
    const stream = await this.docker
      .buildImage(
        { context: opts.context, src: entries },
        { t: opts.tag, dockerfile, labels: opts.labels ?? {}, rm: true, forcerm: true, abortSignal: opts.signal },
      )
      .catch((err: unknown) => {
        throw this.abortedOr(opts.signal, err, `Docker refused the build of ${opts.tag}`);
      });
    await this.consume(stream, (m) => progress.message(m), opts.signal);
    progress.end();
    if (progress.error !== null) throw buildFailure(opts.tag, progress);
    if (opts.signal?.aborted) throw cancelled(opts.tag);
    const made = await this.inspect(opts.tag);
    if (!made) throw new SandboxDeskError('build_failed', `the build of ${opts.tag} ended without an image`);
    return { id: made.Id };
  }

  /** Removes an image by tag or id (a tag of an image with other tags only loses that tag, as `docker rmi`). */
  async remove(ref: string): Promise<void> {
    try {
      await this.docker.getImage(ref).remove();
    } catch (err) {
      if (statusOf(err) === 404)
        throw new SandboxDeskError('image_not_found', `no Docker image ${ref}`, { hint: 'see `sandbox-desk image list`' });
      if (statusOf(err) === 409)
        throw new SandboxDeskError('refused', `Docker refuses to remove ${ref}: ${engineMessage(err)}`, {
          hint: 'remove the containers that use it first',
        });
      throw err;
    }
  }

  /** Pulls with per-layer progress; an unreachable registry is said once, pointing at `image build`. */
  async pull(ref: string, signal: AbortSignal | undefined, onEvent: (e: Event) => void): Promise<{ id: string }> {
    // Set from the stream's callback: a holder, so the check after it is not narrowed away.
    const seen: { failure: string | null } = { failure: null };
    const stream = await this.docker.pull(ref, { abortSignal: signal }).catch((err: unknown) => {
      throw this.abortedOr(signal, err, `pulling ${ref} failed`, ref);
    });
    await this.consume(
      stream,
      (m) => {
        const e = pullEvent(m);
        if (!e) return;
        if (e.kind === 'error') seen.failure = e.text;
        onEvent(e);
      },
      signal,
    );
    if (signal?.aborted) throw cancelled(ref);
    const failure = seen.failure;
    if (failure !== null)
      throw REGISTRY_DOWN_RE.test(failure)
        ? pullFailure(ref, failure)
        : new SandboxDeskError('image_not_found', `pulling ${ref} failed: ${failure}`);
    const made = await this.inspect(ref);
    if (!made) throw new SandboxDeskError('internal', `the pull of ${ref} ended without an image`);
    return { id: made.Id };
  }

  private abortedOr(signal: AbortSignal | undefined, err: unknown, what: string, ref?: string): SandboxDeskError {
    if (signal?.aborted) return cancelled(ref ?? what);
    if (err instanceof SandboxDeskError) return err;
    // dockerode prefixes the engine's words with "(HTTP code 500) server error - ".
    const msg = engineMessage(err)
      .replace(/^\(HTTP code \d+\)[^-]*- /, '')
      .trim();
    if (ref !== undefined && REGISTRY_DOWN_RE.test(msg)) return pullFailure(ref, msg);
    if (statusOf(err) === 404) return new SandboxDeskError('image_not_found', `${what}: ${msg}`);
    return new SandboxDeskError('backend_unavailable', `${what}: ${msg}`, { cause: err });
  }

  /** Reads newline JSON until the stream ends, is destroyed, or the signal fires. */
  private consume(stream: NodeJS.ReadableStream, onMessage: (m: EngineMessage) => void, signal?: AbortSignal): Promise<void> {
    const lines = new JsonLines(onMessage);
    return new Promise((resolve) => {
      const done = (): void => {
        signal?.removeEventListener('abort', onAbort);
        lines.end();
        resolve();
      };
      const onAbort = (): void => {
        (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
        done();
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      stream.on('data', (c: Buffer) => lines.push(c));
      stream.on('end', done);
      stream.on('close', done);
      stream.on('error', done);
    });
  }
}

/** What the engine says when it cannot reach a registry at all (DNS, TCP, TLS, a proxy). */
const REGISTRY_DOWN_RE =
  /dial tcp|lookup .* on |no such host|i\/o timeout|TLS handshake|connection refused|network is unreachable|proxyconnect/i;

function cancelled(what: string): SandboxDeskError {
  return new SandboxDeskError('cancelled', `${what}: cancelled; nothing was tagged`);
}

/** The error of a failing step: which step, what it ran, and the end of its output. */
export function buildFailure(tag: string, p: BuildProgress): SandboxDeskError {
  const where = p.step === null ? 'before its first step' : `at step ${p.step}/${p.total ?? p.step} (${p.stepText})`;
  const output = p.stepOutput();
  const shown = output.length ? `\n${output.map((l) => `  | ${l}`).join('\n')}` : '';
  if (p.outOfSpace()) {
    return new SandboxDeskError('build_failed', `the build of ${tag} ran out of disk space ${where}: ${p.error}${shown}`, {
      hint: 'free space (`docker system df`, then `docker image prune` or `docker builder prune`) and build again',
      details: { step: p.step, output },
    });
  }
  return new SandboxDeskError('build_failed', `the build of ${tag} failed ${where}: ${p.error}${shown}`, {
    hint: 'fix that step of the Dockerfile and build again; nothing was tagged',
    details: { step: p.step, output },
  });
}

function pullFailure(ref: string, why: string): SandboxDeskError {
  return new SandboxDeskError(
    'registry_unreachable',
    `pulling ${ref} failed: no container registry is reachable from this machine (${why.trim()})`,
    {
      hint: 'build the image here instead: `sandbox-desk image build --tag TAG FOLDER` (a folder with a Dockerfile)',
    },
  );
}

/**
 * `/etc/os-release` of an image, read by a short-lived container of it (`cat`, as root, no network);
 * null when the image has no such file or no `cat`.
 */
export async function readOsRelease(docker: Docker, image: string): Promise<string | null> {
  const c = await docker.createContainer({
    Image: image,
    Entrypoint: ['cat'],
    Cmd: ['/etc/os-release'],
    User: 'root',
    Tty: true,
    NetworkDisabled: true,
    Labels: { [IMAGE_LABELS.managed]: 'probe' },
  });
  try {
    await c.start().catch(() => undefined);
    const r = (await c.wait()) as { StatusCode?: number };
    const out = await c.logs({ stdout: true, stderr: false });
    return r.StatusCode === 0 ? out.toString('utf8') : null;
  } finally {
    await c.remove({ force: true }).catch(() => undefined);
  }
}
