import { ISOLATIONS, type Isolation } from '../../shared/isolation.js';
import { SandboxDeskError } from '../../shared/errors.js';
import type { CallTimeouts } from '../plugins/plugin-guard.js';
import type {
  BackendStatus,
  CheckpointArtifact,
  CheckpointCapability,
  CreateEnvironmentOptions,
  ExecPrefixOptions,
  LifecycleContext,
  Mount,
  ProvisionResult,
  ProvisionSpec,
  SandboxEnvironment,
  SandboxProvider,
  SandboxRef,
} from '../provider.js';
import type { PluginHostClient } from './plugin-host-client.js';
import type { EnvironmentData, PrefixKey, ProviderDescriptor } from './rpc-protocol.js';

/**
 * An environment that lives in an isolated plugin host, held here as data. Its exec prefixes were
 * computed in the host when it connected, so commands, the terminal and the desktop run without a
 * round trip to the plugin — and keep running while a crashed host restarts.
 */
export class RemoteEnvironment implements SandboxEnvironment {
  cwd: string | null = null;
  readonly user: string | null;
  readonly home: string;
  readonly defaultCwd: string;
  readonly incarnation: string;
  readonly mounts: readonly Mount[];
  readonly joinsArgv: boolean;

  constructor(
    private readonly data: EnvironmentData,
    private readonly backend: string,
    private readonly plugin: string,
  ) {
    this.user = data.user as string | null;
    this.home = data.home as string;
    this.defaultCwd = data.defaultCwd as string;
    this.incarnation = data.incarnation as string;
    this.mounts = data.mounts;
    this.joinsArgv = data.joinsArgv;
  }

  execPrefix(opts: ExecPrefixOptions): string[] | null {
    const who = opts.user === undefined || opts.user === null || opts.user === this.user ? 'default' : opts.user === 'root' ? 'root' : null;
    if (!who) {
      throw new SandboxDeskError(
        'refused',
        `backend ${this.backend} (plugin ${this.plugin}) runs isolated (plugins.isolation: host), where exec prefixes exist only for the sandbox user (${this.user ?? 'default'}) and root; user ${JSON.stringify(opts.user)} is not available`,
        {
          hint: 'run as the sandbox user or root, or set plugins.isolation to "in-process" (config.json or --plugin-isolation in-process) to let the plugin run as any user',
        },
      );
    }
    const answer = this.data.prefixes[`${who}:${opts.interactive ? 'i' : 'n'}` as PrefixKey];
    if (!answer) return null;
    if ('error' in answer) throw new Error(answer.error);
    return answer.value as string[] | null;
  }

  getTempDir(): string {
    return this.data.tempDir as string;
  }
}

/**
 * A provider whose code runs in an isolated plugin host. Getters answer from the descriptor the host
 * sent at load, with `defaultCwd` refreshed by every call's answer (cheap, no IPC: it is read on every
 * command, and a command's status call brings the plugin's current value); lifecycle calls cross the RPC
 * with the transport's timeouts. The app wraps this in the same guard as an in-process plugin.
 */
export class RemoteProvider implements SandboxProvider {
  readonly name: string;
  readonly isContainer: boolean;
  readonly isolation?: Isolation;
  readonly supportsStreams: boolean;
  readonly description: string;

  constructor(
    private readonly d: ProviderDescriptor,
    private readonly host: PluginHostClient,
    private readonly plugin: string,
    private readonly timeouts: CallTimeouts,
  ) {
    this.name = String(d.name);
    this.isContainer = d.isContainer;
    if (d.isolation && ISOLATIONS.includes(d.isolation)) this.isolation = d.isolation;
    this.supportsStreams = d.supportsStreams;
    this.description = d.description;
  }

  /** The plugin's CheckpointCapability, forwarded call by call over the RPC (absent when it has none). */
  get checkpoints(): CheckpointCapability | undefined {
    if (!this.d.hasCheckpoints) return undefined;
    const c = (method: string, args: unknown[], long: boolean, ctx?: LifecycleContext) =>
      this.call(method as Parameters<PluginHostClient['call']>[1], args, long, ctx);
    return (this.cp ??= {
      memorySupport: async (ref) => (await c('checkpoints.memorySupport', [ref], false)) as { supported: boolean; reason?: string },
      checkpoint: async (ref, spec, ctx) => (await c('checkpoints.checkpoint', [ref, spec], true, ctx)) as CheckpointArtifact,
      restore: async (ref, artifact, ctx) => (await c('checkpoints.restore', [ref, artifact], true, ctx)) as ProvisionResult,
      fork: async (artifact, spec, ctx) => (await c('checkpoints.fork', [artifact, spec], true, ctx)) as ProvisionResult,
      verify: async (artifact) => (await c('checkpoints.verify', [artifact], false)) as { ok: boolean; detail?: string },
      removeCheckpoint: async (artifact) => void (await c('checkpoints.removeCheckpoint', [artifact], false)),
      pause: async (ref) => void (await c('checkpoints.pause', [ref], false)),
      resume: async (ref) => void (await c('checkpoints.resume', [ref], false)),
    });
  }
  private cp: CheckpointCapability | undefined;

  get defaultCwd(): string | undefined {
    // A getter that threw in the host throws here too, so the app warns exactly as it does in-process.
    if ('error' in this.d.defaultCwd) throw new Error(this.d.defaultCwd.error);
    return this.d.defaultCwd.value as string | undefined;
  }

  private call(method: Parameters<PluginHostClient['call']>[1], args: unknown[], long: boolean, ctx?: LifecycleContext): Promise<unknown> {
    return this.host.call(this.name, method, args, long ? this.timeouts.longMs : this.timeouts.shortMs, {
      onProgress: ctx?.progress,
      // The declaration as the plugin holds it after this call: reading it here stays free of IPC.
      onDefaultCwd: (d) => (this.d.defaultCwd = d),
    });
  }

  async provision(spec: ProvisionSpec, ctx?: LifecycleContext): Promise<ProvisionResult> {
    return (await this.call('provision', [spec], true, ctx)) as ProvisionResult;
  }

  async start(ref: SandboxRef, ctx?: LifecycleContext): Promise<void> {
    await this.call('start', [ref], true, ctx);
  }

  async stop(ref: SandboxRef, ctx?: LifecycleContext): Promise<void> {
    await this.call('stop', [ref], true, ctx);
  }

  async remove(ref: SandboxRef, opts: { force: boolean }): Promise<void> {
    await this.call('remove', [ref, opts], false);
  }

  async status(ref: SandboxRef): Promise<BackendStatus> {
    return (await this.call('status', [ref], false)) as BackendStatus;
  }

  async createEnvironment(opts: CreateEnvironmentOptions): Promise<SandboxEnvironment> {
    const data = (await this.call('createEnvironment', [opts], false)) as EnvironmentData | null;
    if (!data || typeof data !== 'object' || !('prefixes' in data)) return data as unknown as SandboxEnvironment; // refused by the guard
    return new RemoteEnvironment(data, this.name, this.plugin);
  }

  async dispose(): Promise<void> {
    if (this.d.hasDispose && this.host.state === 'running') await this.call('dispose', [], false);
  }
}
