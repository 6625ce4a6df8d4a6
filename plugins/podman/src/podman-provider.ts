import type {
  BackendStatus,
  CreateEnvironmentOptions,
  PluginContext,
  ProvisionResult,
  ProvisionSpec,
  SandboxEnvironment,
  SandboxProvider,
  SandboxRef,
} from '../../../src/sandbox/plugin-api.js';
import { createArgv, execPrefixArgv, ulimitArgs } from './podman-argv.js';
import { PodmanCheckpoints } from './podman-checkpoints.js';

export const DEFAULT_PODMAN_IMAGE = 'localhost/sandbox-desk/base:latest';
const DEFAULT_USER_LABEL = 'io.sandbox-desk.default-user';

/** Podman containers as sandboxes, driven through the podman CLI (no socket service needed). */
export class PodmanProvider implements SandboxProvider {
  readonly name = 'podman';
  readonly isContainer = true;
  /**
   * Declared absolute: the sandbox images' user is `agent`. It looks like a host path (/home/…), which
   * is exactly why it is declared — the container guard keeps a cd under the home a backend declares.
   */
  readonly defaultCwd = '/home/agent';
  readonly supportsStreams = true;
  readonly description = `a Podman container (default image ${DEFAULT_PODMAN_IMAGE})`;

  /** Checkpoints through `podman commit`, pause through `podman pause` (podman-checkpoints.ts). */
  readonly checkpoints: PodmanCheckpoints;

  constructor(readonly ctx: PluginContext) {
    this.checkpoints = new PodmanCheckpoints(this);
  }

  async podman(args: string[], timeoutMs = 60_000) {
    const r = await this.ctx.helpers.runArgv(['podman', ...args], { timeoutMs });
    if (r.code === null && /ENOENT/.test(r.stderr)) {
      throw this.ctx.error('backend_unavailable', 'podman is not installed on this machine', {
        hint: 'install it (Debian: apt-get install podman)',
      });
    }
    return r;
  }

  fail(what: string, r: { code: number | null; stderr: string }) {
    return this.ctx.error('backend_unavailable', `podman ${what} failed: ${r.stderr.trim() || `exit ${r.code}`}`);
  }

  async provision(spec: ProvisionSpec): Promise<ProvisionResult> {
    const image = spec.image ?? DEFAULT_PODMAN_IMAGE;
    const info = await this.podman([
      'image',
      'inspect',
      '--format',
      `{{.Config.User}}|{{index .Config.Labels "${DEFAULT_USER_LABEL}"}}`,
      image,
    ]);
    if (info.code !== 0) {
      throw this.ctx.error('image_not_found', `image ${image} does not exist in podman`, {
        hint:
          image === DEFAULT_PODMAN_IMAGE
            ? 'run `npm run setup` (it copies sandbox-desk/base from docker into podman)'
            : `pull or build it: podman pull ${image}`,
      });
    }
    const [imageUser, labelUser] = info.stdout.trim().split('|');
    const user = spec.user ?? (imageUser || (labelUser && labelUser !== '<no value>' ? labelUser : '') || null);
    return { backendRef: await this.createContainer(spec, image), user, image };
  }

  /** One create for provision, restore and fork: the same name, labels, mounts, limits and hardening. */
  async createContainer(spec: ProvisionSpec, image: string): Promise<string> {
    const limits = await this.ctx.helpers.runArgv(['bash', '-c', 'ulimit -Hn; ulimit -Hu']);
    const [nofile, nproc] = limits.stdout.trim().split('\n').map(Number);
    const made = await this.podman(
      createArgv({
        name: spec.resourceName,
        image,
        labels: spec.labels,
        env: spec.env,
        mounts: spec.mounts,
        ulimits: ulimitArgs(nofile ?? NaN, nproc ?? NaN),
        hostname: spec.name.slice(0, 63),
      }).slice(1),
    );
    if (made.code !== 0) {
      if (/already in use/.test(made.stderr))
        throw this.ctx.error('name_taken', `a podman container named ${spec.resourceName} already exists`, {
          hint: `remove it (podman rm -f ${spec.resourceName})`,
        });
      throw this.fail('create', made);
    }
    return made.stdout.trim();
  }

  id(ref: SandboxRef): string {
    if (!ref.backendRef)
      throw this.ctx.error('sandbox_missing', `sandbox ${ref.name} has no container`, {
        hint: `remove it with \`sandbox-desk sandbox rm ${ref.name}\``,
      });
    return ref.backendRef;
  }

  async start(ref: SandboxRef): Promise<void> {
    const r = await this.podman(['start', this.id(ref)]);
    if (r.code !== 0) throw this.fail('start', r);
  }

  async stop(ref: SandboxRef): Promise<void> {
    const r = await this.podman(['stop', '-t', '3', this.id(ref)]);
    if (r.code !== 0 && !/no such container/i.test(r.stderr)) throw this.fail('stop', r);
  }

  async remove(ref: SandboxRef, opts: { force: boolean }): Promise<void> {
    if (!ref.backendRef) return;
    const image = await this.podman(['inspect', '--type', 'container', '--format', '{{.Image}}', ref.backendRef]);
    const r = await this.podman(['rm', ...(opts.force ? ['-f', '-t', '0'] : []), ref.backendRef]);
    if (r.code !== 0 && !/no such container/i.test(r.stderr)) throw this.fail('rm', r);
    // A container restored or forked from a checkpoint that was removed since keeps its image: it goes now.
    await this.checkpoints.removeIfOrphaned(image.code === 0 ? image.stdout.trim() : null);
  }

  async status(ref: SandboxRef): Promise<BackendStatus> {
    if (!ref.backendRef) return { state: 'missing', incarnation: null, detail: 'never provisioned' };
    const r = await this.podman(
      [
        'inspect',
        '--type',
        'container',
        '--format',
        '{{.State.Running}}|{{.Id}}|{{.State.StartedAt}}|{{.State.Status}}|{{.State.ExitCode}}|{{.State.Paused}}',
        ref.backendRef,
      ],
      20_000,
    );
    if (r.code !== 0) {
      if (/no such/i.test(r.stderr))
        return { state: 'missing', incarnation: null, detail: 'the container was removed outside Sandbox Desk' };
      throw this.fail('inspect', r);
    }
    const [running, id, started, status, exit, paused] = r.stdout.trim().split('|');
    // Paused (podman pause, the cgroup freezer) is the same incarnation: its shells answer after a resume.
    if (paused === 'true' || status === 'paused')
      return { state: 'paused', incarnation: `${id}@${started}`, detail: 'paused (frozen)', details: { engine: 'podman' } };
    if (running === 'true') return { state: 'running', incarnation: `${id}@${started}`, details: { engine: 'podman' } };
    return { state: 'stopped', incarnation: null, detail: status === 'exited' ? `exited (${exit})` : status };
  }

  async createEnvironment(opts: CreateEnvironmentOptions): Promise<SandboxEnvironment> {
    const st = await this.status(opts.sandbox);
    if (st.state === 'missing')
      throw this.ctx.error('sandbox_missing', `the container of sandbox ${opts.sandbox.name} is gone`, {
        hint: `remove it with \`sandbox-desk sandbox rm ${opts.sandbox.name}\``,
      });
    if (st.state !== 'running' || !st.incarnation)
      throw this.ctx.error('sandbox_not_running', `sandbox ${opts.sandbox.name} is not running (${st.detail ?? st.state})`, {
        hint: `start it with \`sandbox-desk sandbox start ${opts.sandbox.name}\``,
      });
    const id = this.id(opts.sandbox);
    const user = opts.sandbox.user;
    const home =
      opts.cachedHome && opts.cachedHome.incarnation === st.incarnation
        ? opts.cachedHome.home
        : await this.ctx.helpers.measureHome(execPrefixArgv(id, user, false));
    return {
      user,
      home,
      defaultCwd: opts.cwd === '~' ? home : opts.cwd,
      cwd: null,
      mounts: opts.sandbox.mounts,
      incarnation: st.incarnation,
      execPrefix: ({ user: as, interactive }) => execPrefixArgv(id, as ?? user, interactive),
      getTempDir: () => '/tmp',
    };
  }
}
