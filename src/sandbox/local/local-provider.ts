import { tmpdir, userInfo } from 'node:os';
import { SandboxDeskError } from '../../shared/errors.js';
import { measureHome } from '../measure-home.js';
import type {
  BackendStatus,
  CreateEnvironmentOptions,
  ExecPrefixOptions,
  ProvisionResult,
  ProvisionSpec,
  SandboxEnvironment,
  SandboxProvider,
} from '../provider.js';

/** Commands run on this machine, as the app's own user. No isolation: a sandbox in name only. */
class LocalEnvironment implements SandboxEnvironment {
  cwd: string | null = null;
  readonly mounts = [];
  readonly incarnation = `local:${process.pid}`;
  private readonly me = userInfo().username;

  constructor(
    readonly user: string | null,
    readonly home: string,
    readonly defaultCwd: string,
  ) {}

  execPrefix(opts: ExecPrefixOptions): string[] | null {
    const user = opts.user ?? this.user ?? this.me;
    if (user === this.me) return [];
    // Switching users needs root; without it the local backend cannot run as someone else.
    return process.getuid?.() === 0 ? ['runuser', '-u', user, '--'] : null;
  }

  getTempDir(): string {
    return tmpdir();
  }
}

export class LocalProvider implements SandboxProvider {
  readonly name = 'local';
  readonly isContainer = false;
  readonly isolation = 'host' as const;
  /** The local backend has no default of its own: each sandbox records the directory the user chose. */
  readonly defaultCwd = undefined;
  readonly supportsStreams = true;
  readonly description = 'commands run directly on this machine as your user (no isolation)';

  async provision(spec: ProvisionSpec): Promise<ProvisionResult> {
    if (spec.image)
      throw new SandboxDeskError('invalid_input', 'the local backend does not use an image', {
        hint: 'drop --image, or use --backend docker',
      });
    return { backendRef: null, user: spec.user, image: null };
  }

  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  async remove(): Promise<void> {}

  async status(): Promise<BackendStatus> {
    return { state: 'running', incarnation: `local:${process.pid}` };
  }

  async createEnvironment(opts: CreateEnvironmentOptions): Promise<SandboxEnvironment> {
    const probe = new LocalEnvironment(opts.sandbox.user, '/', '/');
    const prefix = probe.execPrefix({ interactive: false });
    if (!prefix) {
      throw new SandboxDeskError('refused', `the local backend cannot run as user ${opts.sandbox.user} without root`, {
        hint: 'recreate the sandbox without --user',
      });
    }
    const home = await measureHome(prefix);
    return new LocalEnvironment(opts.sandbox.user, home, opts.cwd === '~' ? home : opts.cwd);
  }
}
