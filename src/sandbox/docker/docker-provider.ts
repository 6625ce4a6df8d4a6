import { rmSync } from 'node:fs';
import Docker from 'dockerode';
import { SandboxDeskError } from '../../shared/errors.js';
import { closestImageName } from '../../shared/did-you-mean.js';
import { HOME_SCRIPT, homeFrom } from '../measure-home.js';
import { runInContainer } from './docker-api-exec.js';
import type {
  ProviderWatchListener,
  BackendStatus,
  CreateEnvironmentOptions,
  ExecPrefixOptions,
  LifecycleContext,
  Mount,
  ProviderContext,
  ProvisionResult,
  ProvisionSpec,
  SandboxEnvironment,
  SandboxProvider,
  SandboxRef,
} from '../provider.js';
import { resolveDockerEndpoint, type DockerEndpoint } from './docker-endpoint.js';
import { engineMessage, engineUnreachable, isUnreachable, statusOf } from './docker-errors.js';
import { DockerImages, readOsRelease } from './docker-images.js';
import { ensureDesktopImage } from './desktop-image.js';
import { parseDockerOptions } from './docker-options.js';
import type { EngineInfo } from '../../shared/observability-types.js';
import type { LogCapability, ResourceCapability } from '../observability.js';
import { dockerEngineInfo, dockerLogs, dockerResources } from './docker-observability.js';
import { containerCreateOptions } from './docker-container-spec.js';
import { DockerCheckpoints } from './docker-checkpoints.js';
import { DockerEventFeed } from './docker-event-feed.js';
import type { IDisposable } from '../../shared/lifecycle.js';
import { DockerNetworkPolicy } from './docker-network.js';
import type { NetworkCapability } from '../provider.js';
import { ensureInboxDir, inboxDirOf, inboxFromMounts, inboxNameOf } from './docker-inbox.js';

export const DEFAULT_DOCKER_IMAGE = 'sandbox-desk/base:latest';
/** Images may name the user commands should run as, when they do not set USER. */
export const DEFAULT_USER_LABEL = 'io.sandbox-desk.default-user';

class DockerEnvironment implements SandboxEnvironment {
  cwd: string | null = null;

  constructor(
    private readonly containerId: string,
    readonly user: string | null,
    readonly home: string,
    readonly defaultCwd: string,
    readonly mounts: readonly Mount[],
    readonly incarnation: string,
    /** The network policy's proxy settings (docker-network.ts), given to every process started. */
    private readonly extraEnv: Record<string, string> = {},
    /** The container's inbox as inspected (docker-inbox.ts); undefined when it has none. */
    readonly inbox?: { hostDir: string; sandboxDir: string },
  ) {}

  execPrefix(opts: ExecPrefixOptions): string[] {
    const user = opts.user ?? this.user;
    const env = Object.entries(this.extraEnv).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
    return ['docker', 'exec', '-i', ...(opts.interactive ? ['-t'] : []), ...(user ? ['-u', user] : []), ...env, this.containerId];
  }

  getTempDir(): string {
    return '/tmp';
  }
}

/** Sandboxes as Docker containers, through the engine's API (dockerode) and `docker exec` streams. */
export class DockerProvider implements SandboxProvider {
  readonly name = 'docker';
  readonly isContainer = true;
  readonly isolation = 'container' as const;
  readonly defaultCwd: string = '~';
  readonly supportsStreams = true;
  readonly description = 'a Docker container (default image sandbox-desk/base:latest)';
  readonly endpoint: DockerEndpoint;
  private readonly docker: Docker;
  /** The engine's images: list, build, remove, pull (the `image` commands use it too). */
  readonly images: DockerImages;
  /** `docker logs` of the container (src/sandbox/docker/docker-observability.ts). */
  readonly logs: LogCapability<SandboxRef>;
  /** The engine's stats of the container. */
  readonly resources: ResourceCapability<SandboxRef>;
  /** Checkpoints (docker commit), restore, fork and pause: docker-checkpoints.ts. */
  readonly checkpoints: DockerCheckpoints;

  private readonly net: DockerNetworkPolicy;

  /** Where containers' inbox folders go (docker-inbox.ts); null: no inboxes (no data dir, or a remote engine). */
  private readonly inboxRoot: string | null;

  constructor(endpoint: DockerEndpoint = resolveDockerEndpoint(), ctx?: ProviderContext) {
    this.endpoint = endpoint;
    const localEngine = Boolean((endpoint.options as { socketPath?: string }).socketPath);
    // A remote engine binds folders of its own machine: a socket the app made here would never show there.
    this.inboxRoot = ctx && localEngine ? ctx.dataDir : null;
    this.docker = new Docker(endpoint.options);
    this.images = new DockerImages(this.docker);
    this.logs = dockerLogs(this.docker);
    this.resources = dockerResources(this.docker);
    this.checkpoints = new DockerCheckpoints({
      docker: this.docker,
      call: (fn) => this.call(fn),
      localEngine,
      inboxDir: (name) => this.readyInboxDir(name),
    });
    this.net = new DockerNetworkPolicy(this.docker, DEFAULT_DOCKER_IMAGE);
  }

  /** The inbox folder of the container `resourceName`, made (0755) before the container is; undefined: none. */
  private readyInboxDir(resourceName: string): string | undefined {
    if (!this.inboxRoot) return undefined;
    const dir = inboxDirOf(this.inboxRoot, resourceName);
    ensureInboxDir(dir);
    return dir;
  }

  /** The engine's own state: reachable, version, disk used (`docker system df`); never throws. */
  engineInfo(): Promise<NonNullable<EngineInfo['docker']>> {
    return dockerEngineInfo(this.docker, this.endpoint);
  }

  /** Follows the engine's events for containers carrying `labels` (see DockerEventFeed). */
  watch(labels: Record<string, string>, listener: ProviderWatchListener): IDisposable {
    const filters = { type: ['container' as const], label: Object.entries(labels).map(([k, v]) => `${k}=${v}`) };
    return new DockerEventFeed(() => this.docker.getEvents({ filters }), labels, listener);
  }

  /** Network policy: an internal network per sandbox and an egress relay (docker-network.ts). */
  readonly networkPolicy: NetworkCapability = {
    modes: ['open', 'offline', 'allow'],
    liveModeSwitch: true,
    apply: (ref, plan) =>
      this.call(() => this.net.apply(this.container(ref).id, plan.policy, plan.socketDir, plan.labels)).catch((err: unknown) => {
        if (err instanceof SandboxDeskError) throw err;
        throw new SandboxDeskError(
          'backend_unavailable',
          `Docker could not apply the network policy of ${ref.name}: ${engineMessage(err)}`,
          {
            cause: err,
          },
        );
      }),
    release: (_ref, plan, when) =>
      this.call(() => (when === 'removed' ? this.net.removeAll(plan.resourceName) : this.net.stopRelay(plan.resourceName))),
  };

  /** "No such image", with the engine's closest tag as a suggestion when it looks like a typo. */
  private async imageNotFound(image: string): Promise<SandboxDeskError> {
    const tags = await this.images.list().then(
      (l) => l.flatMap((i) => i.tags),
      () => [],
    );
    const close = closestImageName(image, tags);
    return new SandboxDeskError('image_not_found', `Image ${image} does not exist in the Docker engine`, {
      hint: close
        ? `did you mean ${close}? (see \`sandbox-desk image list\`)`
        : `build it (\`sandbox-desk image build --tag ${image} FOLDER\`) or pull it (\`sandbox-desk image pull ${image}\`); \`sandbox-desk image list\` shows what is here`,
      details: { suggestion: close },
    });
  }

  /** Reads an image's /etc/os-release (a short-lived container); null when it has none. */
  osRelease(image: string): Promise<string | null> {
    return this.call(() => readOsRelease(this.docker, image));
  }

  /** Every engine call goes through here so "engine down" always reads the same. */
  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (isUnreachable(err)) throw engineUnreachable(this.endpoint, err);
      throw err;
    }
  }

  async ping(): Promise<void> {
    await this.call(() => this.docker.ping());
  }

  async provision(spec: ProvisionSpec, ctx: LifecycleContext = {}): Promise<ProvisionResult> {
    const opts = parseDockerOptions(spec.options);
    const asked = spec.image ?? DEFAULT_DOCKER_IMAGE;
    const progress = ctx.progress ?? (() => undefined);
    // --desktop: the image's desktop variant, built once and cached by its tag (never an install per start).
    const image = opts.desktop
      ? await this.call(() =>
          ensureDesktopImage(
            { images: this.images, osRelease: (i) => this.osRelease(i) },
            asked,
            (e) => progress({ step: e.kind === 'step' ? `desktop image step ${e.step}/${e.total}` : 'desktop image', message: e.text }),
            ctx.signal,
          ),
        )
      : asked;
    progress({ step: 'image', message: `looking up image ${image}` });
    const info = await this.call(() => this.docker.getImage(image).inspect()).catch(async (err: unknown) => {
      if (statusOf(err) === 404) throw await this.imageNotFound(image);
      throw err;
    });
    // Hardened default: the image's non-root user when it has one.
    const user = spec.user ?? (info.Config?.User || info.Config?.Labels?.[DEFAULT_USER_LABEL] || null);
    ctx.signal?.throwIfAborted();
    progress({ step: 'container', message: `creating container ${spec.resourceName}` });
    const container = await this.call(() =>
      this.docker.createContainer(containerCreateOptions(spec, image, this.readyInboxDir(spec.resourceName))),
    ).catch((err: unknown) => {
      if (statusOf(err) === 409) {
        throw new SandboxDeskError('name_taken', `A container named ${spec.resourceName} already exists`, {
          hint: `remove it (\`docker rm -f ${spec.resourceName}\`) or choose another sandbox name`,
        });
      }
      if (err instanceof SandboxDeskError) throw err;
      throw new SandboxDeskError('backend_unavailable', `Docker refused to create the container: ${engineMessage(err)}`, { cause: err });
    });
    if (ctx.signal?.aborted) {
      // Cancelled while the engine was creating it: the caller never learns its id, so it is removed here.
      await this.call(() => container.remove({ force: true, v: true })).catch(() => undefined);
      ctx.signal.throwIfAborted();
    }
    return { backendRef: container.id, user, image };
  }

  private container(ref: SandboxRef): Docker.Container {
    if (!ref.backendRef)
      throw new SandboxDeskError('sandbox_missing', `sandbox ${ref.name} has no container`, {
        hint: `remove it with \`sandbox-desk sandbox rm ${ref.name}\``,
      });
    return this.docker.getContainer(ref.backendRef);
  }

  private missing(ref: SandboxRef): SandboxDeskError {
    return new SandboxDeskError('sandbox_missing', `the container of sandbox ${ref.name} was removed outside Sandbox Desk`, {
      hint: `remove the sandbox with \`sandbox-desk sandbox rm ${ref.name}\` and create it again`,
    });
  }

  async start(ref: SandboxRef, ctx: LifecycleContext = {}): Promise<void> {
    ctx.signal?.throwIfAborted();
    ctx.progress?.({ step: 'start', message: 'starting the container' });
    await this.call(() => this.container(ref).start()).catch((err: unknown) => {
      if (statusOf(err) === 304) return;
      if (statusOf(err) === 404) throw this.missing(ref);
      throw new SandboxDeskError('backend_unavailable', `Docker could not start sandbox ${ref.name}: ${engineMessage(err)}`, {
        cause: err,
      });
    });
    // An `allow` sandbox's relay lives in the container's network namespace: it joins this run's.
    await this.call(() => this.net.relayFollows(this.container(ref).id)).catch((err: unknown) => {
      throw new SandboxDeskError('backend_unavailable', `Docker could not start the egress relay of ${ref.name}: ${engineMessage(err)}`, {
        cause: err,
      });
    });
  }

  async stop(ref: SandboxRef): Promise<void> {
    await this.call(() => this.container(ref).stop({ t: 3 })).catch((err: unknown) => {
      if (statusOf(err) === 304) return;
      if (statusOf(err) === 404) throw this.missing(ref);
      throw new SandboxDeskError('backend_unavailable', `Docker could not stop sandbox ${ref.name}: ${engineMessage(err)}`, { cause: err });
    });
  }

  async remove(ref: SandboxRef, opts: { force: boolean }): Promise<void> {
    if (!ref.backendRef) return;
    // A container made from a checkpoint image whose checkpoint was removed keeps that image alive: it goes with it.
    const inspected = await this.call(() => this.container(ref).inspect()).then(
      (i) => ({ image: i.Image, name: inboxNameOf(i) }),
      () => undefined,
    );
    // Its inbox folder goes with it (kept, it would be one more folder in the data dir per sandbox ever made).
    const dropInbox = (): void => {
      if (this.inboxRoot && inspected) rmSync(inboxDirOf(this.inboxRoot, inspected.name), { recursive: true, force: true });
    };
    await this.call(() => this.container(ref).remove({ force: opts.force, v: true })).then(
      async () => {
        dropInbox();
        await this.checkpoints.removeIfOrphaned(inspected?.image);
      },
      (err: unknown) => {
        if (statusOf(err) === 404) return dropInbox(); // already gone: removing it is done
        throw new SandboxDeskError('backend_unavailable', `Docker could not remove sandbox ${ref.name}: ${engineMessage(err)}`, {
          cause: err,
        });
      },
    );
  }

  async status(ref: SandboxRef): Promise<BackendStatus> {
    if (!ref.backendRef) return { state: 'missing', incarnation: null, detail: 'never provisioned' };
    try {
      const info = await this.call(() => this.container(ref).inspect());
      const s = info.State;
      // The limits as the engine enforces them (read back, not what was asked).
      const hc = info.HostConfig as { NanoCpus?: number; Memory?: number } | undefined;
      const details = {
        cpus: hc?.NanoCpus ? hc.NanoCpus / 1e9 : 'no limit',
        memoryMiB: hc?.Memory ? Math.round(hc.Memory / 2 ** 20) : 'no limit',
      };
      // Paused (the cgroup freezer) is still the same incarnation: its shells come back on resume.
      if (s.Paused) return { state: 'paused', incarnation: `${info.Id}@${s.StartedAt}`, detail: 'paused (frozen)', details };
      if (s.Running) return { state: 'running', incarnation: `${info.Id}@${s.StartedAt}`, details };
      // `docker rm -f` marks the container for removal, kills it, then removes it: in between it is as
      // good as gone (it cannot be started again), and "start it" would be the wrong thing to say.
      if (s.Status === 'removing') return { state: 'missing', incarnation: null, detail: 'the container is being removed' };
      // Docker's zero time (0001-01-01…) means "never ran".
      const since = s.FinishedAt && !s.FinishedAt.startsWith('0001-') ? s.FinishedAt : undefined;
      return {
        state: 'stopped',
        incarnation: null,
        detail: s.Status === 'exited' ? `exited with code ${s.ExitCode}${s.ExitCode === 143 ? ' (stopped with SIGTERM)' : ''}` : s.Status,
        ...(since ? { since } : {}),
        details,
      };
    } catch (err) {
      if (statusOf(err) === 404) return { state: 'missing', incarnation: null, detail: 'the container was removed outside Sandbox Desk' };
      throw err;
    }
  }

  /**
   * The sandbox user's home, measured as measure-home.ts does, through the engine's API: a create's
   * first command waited on a `docker exec` CLI process for it (bench/warm.ts cold create).
   */
  private async measureHome(ref: SandboxRef): Promise<string> {
    const r = await this.call(() =>
      runInContainer(this.docker, ref.backendRef!, ['bash', '-c', HOME_SCRIPT], { user: ref.user, timeoutMs: 30_000 }),
    );
    return homeFrom(r.code, r.stdout, r.stderr);
  }

  async createEnvironment(opts: CreateEnvironmentOptions): Promise<SandboxEnvironment> {
    const st = await this.status(opts.sandbox);
    if (st.state === 'missing') throw this.missing(opts.sandbox);
    if (st.state !== 'running' || !st.incarnation) {
      throw new SandboxDeskError('sandbox_not_running', `sandbox ${opts.sandbox.name} is not running (${st.detail ?? st.state})`, {
        hint: `start it with \`sandbox-desk sandbox start ${opts.sandbox.name}\``,
      });
    }
    // The home is measured once per incarnation of the container; a restart measures it again. The
    // three engine calls at once: none needs another's answer.
    const [home, extraEnv, inspected] = await Promise.all([
      opts.cachedHome && opts.cachedHome.incarnation === st.incarnation ? opts.cachedHome.home : this.measureHome(opts.sandbox),
      this.call(() => this.net.proxyEnvFor(opts.sandbox.backendRef!)),
      // From the container's real mounts: a container made before inboxes (or by another data dir) has none.
      this.call(() => this.container(opts.sandbox).inspect()),
    ]);
    const name = inboxNameOf(inspected);
    const inbox = inboxFromMounts(inspected.Mounts, this.inboxRoot ? inboxDirOf(this.inboxRoot, name) : undefined);
    return new DockerEnvironment(
      opts.sandbox.backendRef!,
      opts.sandbox.user,
      home,
      opts.cwd === '~' ? home : opts.cwd,
      opts.sandbox.mounts,
      st.incarnation,
      extraEnv,
      inbox,
    );
  }
}
