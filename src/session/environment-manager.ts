import { homedir } from 'node:os';
import { sep } from 'node:path';
import { normalizeDeclaredCwd, readProviderDefaultCwd } from '../cwd/declared-default-cwd.js';
import { projectRoot } from '../platform/project-root.js';
import { SandboxDeskError } from '../shared/errors.js';
import type { ExecWarning } from '../shared/exec-result.js';
import { DisposableStore, Emitter, type Event, type IDisposable } from '../shared/lifecycle.js';
import type { BackendStatus, SandboxEnvironment, SandboxProvider, SandboxRef } from '../sandbox/provider.js';
import type { SandboxRecord, SandboxStore } from '../store/sandbox-store.js';

/** Why an incarnation's environment ended. */
export type DisposeReason = 'changed' | 'stopped' | 'missing' | 'removed' | 'restarting' | 'transport' | 'closed';

export interface EnvironmentDisposed {
  sandbox: string;
  incarnation: string;
  reason: DisposeReason;
}

export interface IncarnationChanged {
  sandbox: string;
  /** The incarnation the app had connected to before, null when it had none. */
  previous: string | null;
  current: string;
}

export interface EnvironmentManagerOptions {
  sandboxes: Pick<SandboxStore, 'get' | 'setDeclaredDefaultCwd' | 'setHome'>;
  /** The host user's home (host-shaped paths are recognised against it). */
  hostHome?: string;
}

interface Live {
  env: SandboxEnvironment;
  /** Everything tied to this incarnation: session shells, terminals, port forwards, screen streams. */
  scope: DisposableStore;
}

export function sandboxRef(rec: SandboxRecord): SandboxRef {
  return {
    name: rec.name,
    backendRef: rec.backendRef,
    image: rec.image,
    user: rec.user,
    mounts: rec.mounts,
    env: rec.env,
    options: rec.options,
  };
}

/**
 * The live side of every sandbox: the connected environment of its current incarnation (cached), the
 * connect itself (declared default cwd, measured home), and the store of everything tied to that
 * incarnation. When the backend reports another incarnation (restarted, replaced), or the sandbox is
 * stopped, missing or removed, the old incarnation's store is disposed — its shells, terminals,
 * forwards and screen streams end — before anything uses the new one.
 */
export class EnvironmentManager implements IDisposable {
  readonly hostHome: string;
  private readonly live = new Map<string, Live>();
  /** One connect per sandbox at a time: two callers share it, so no incarnation store is orphaned. */
  private readonly connecting = new Map<string, Promise<SandboxEnvironment>>();
  /** Each environment's incarnation store, also after it ended (a late registration is disposed at once). */
  private readonly scopes = new WeakMap<SandboxEnvironment, DisposableStore>();
  /** Warnings found while connecting, delivered with the next result that concerns the sandbox. */
  private readonly pending = new Map<string, ExecWarning[]>();
  private readonly changed = new Emitter<IncarnationChanged>();
  private readonly disposed = new Emitter<EnvironmentDisposed>();
  /** A sandbox is now connected to an incarnation other than the one before (the first connect included). */
  readonly onIncarnationChanged: Event<IncarnationChanged> = this.changed.event;
  /** An incarnation's environment ended, and with it everything registered in its store. */
  readonly onEnvironmentDisposed: Event<EnvironmentDisposed> = this.disposed.event;
  /** The last incarnation connected per sandbox, to tell a change from a reconnect. */
  private readonly lastIncarnation = new Map<string, string>();

  constructor(private readonly opts: EnvironmentManagerOptions) {
    this.hostHome = opts.hostHome ?? homedir();
  }

  // ---- declared default cwd -----------------------------------------------------------------------

  /**
   * What the sandbox declares as its default cwd, stored at creation: the user's `--default-cwd` when
   * usable, else the backend's declaration (null: read the backend's at connect time), and for the
   * local backend the directory the user is in — unless that is the app's own install directory.
   */
  declareDefaultCwd(provider: SandboxProvider, asked: string | undefined, warnings: ExecWarning[], here = process.cwd()): string | null {
    const fallback = provider.isContainer ? 'the backend default' : 'the current directory';
    if (asked !== undefined) {
      refuseRelativeDefaultCwd(asked);
      const d = normalizeDeclaredCwd(asked, {
        isContainer: provider.isContainer,
        hostHome: this.hostHome,
        origin: '--default-cwd',
        fallback,
      });
      if (d.warning) warnings.push(d.warning);
      if (d.value) return d.value;
    }
    if (provider.isContainer) return null;
    // Never the app's own install directory: that is not a project the user chose.
    const app = projectRoot();
    return here === app || here.startsWith(app + sep) ? '~' : here;
  }

  /** The declaration in effect, read after connecting: a connect may have dropped one that was a host path. */
  declaredAfterConnect(rec: SandboxRecord, provider: SandboxProvider): { value: string; warning?: ExecWarning } {
    return this.effectiveDeclaredCwd(this.opts.sandboxes.get(rec.name) ?? rec, provider);
  }

  /** The declared default cwd in effect: the sandbox's own, else the backend's (read now, defensively). */
  effectiveDeclaredCwd(rec: SandboxRecord, provider: SandboxProvider): { value: string; warning?: ExecWarning } {
    if (rec.declaredDefaultCwd) return { value: rec.declaredDefaultCwd };
    const read = readProviderDefaultCwd(provider);
    const d = normalizeDeclaredCwd(read.raw, {
      isContainer: provider.isContainer,
      hostHome: this.hostHome,
      origin: `backend ${provider.name} defaultCwd`,
      fallback: '"~"',
    });
    if (read.error) return { value: '~', warning: { code: 'default_cwd_ignored', message: `${read.error}; using "~"` } };
    return d.warning ? { value: '~', warning: d.warning } : { value: d.value ?? '~' };
  }

  // ---- warnings -----------------------------------------------------------------------------------

  addWarning(sandbox: string, w: ExecWarning): void {
    this.pending.set(sandbox, [...(this.pending.get(sandbox) ?? []), w]);
  }

  takeWarnings(sandbox: string): ExecWarning[] {
    const w = this.pending.get(sandbox) ?? [];
    this.pending.delete(sandbox);
    return w;
  }

  // ---- environments and incarnations --------------------------------------------------------------

  /** The cached environment of the current incarnation, if connected (no backend round trip). */
  cached(sandbox: string): SandboxEnvironment | undefined {
    return this.live.get(sandbox)?.env;
  }

  /**
   * The store of the incarnation `env` belongs to: register there whatever must end with it. For an
   * environment that already ended, the store is disposed, so anything added is disposed at once.
   * Null for an environment this manager did not connect (e.g. the host's own, for host desktops).
   */
  scopeOf(env: SandboxEnvironment): DisposableStore | null {
    return this.scopes.get(env) ?? null;
  }

  /** Ends the current incarnation's environment and everything registered in its store. */
  drop(sandbox: string, reason: DisposeReason): void {
    const l = this.live.get(sandbox);
    if (!l) return;
    this.live.delete(sandbox);
    try {
      l.scope.dispose();
    } finally {
      this.disposed.fire({ sandbox, incarnation: l.env.incarnation, reason });
    }
  }

  /** Takes a status the backend just reported into account: a stopped sandbox or a new incarnation ends the old one. */
  observe(sandbox: string, status: BackendStatus): void {
    const l = this.live.get(sandbox);
    if (!l) return;
    if (status.state === 'missing') this.drop(sandbox, 'missing');
    // Paused is frozen, not ended: the incarnation and its shells live on and answer after a resume.
    else if (status.state === 'paused' && status.incarnation === l.env.incarnation) return;
    else if (status.state !== 'running') this.drop(sandbox, 'stopped');
    else if (status.incarnation !== l.env.incarnation) this.drop(sandbox, 'changed');
  }

  /**
   * The live environment for a command. With `fast` (the session has a live shell) the cache is used
   * without a backend round trip; otherwise the backend is asked for its state, so a restart, stop or
   * removal is noticed (and the old incarnation disposed) before anything runs.
   */
  async environmentFor(rec: SandboxRecord, provider: SandboxProvider, fast: boolean): Promise<SandboxEnvironment> {
    const cached = this.live.get(rec.name)?.env;
    if (cached && fast) return cached;
    const status = await provider.status(sandboxRef(rec));
    this.observe(rec.name, status);
    if (status.state === 'missing') {
      throw new SandboxDeskError('sandbox_missing', `sandbox ${rec.name} is gone: ${status.detail ?? 'removed outside Sandbox Desk'}`, {
        hint: `remove it with \`sandbox-desk sandbox rm ${rec.name}\` and create it again`,
      });
    }
    if (status.state === 'paused') {
      throw new SandboxDeskError('sandbox_not_running', `sandbox ${rec.name} is paused`, {
        hint: `resume it with \`sandbox-desk sandbox resume ${rec.name}\``,
      });
    }
    if (status.state !== 'running') {
      throw new SandboxDeskError('sandbox_not_running', `sandbox ${rec.name} is not running${status.detail ? ` (${status.detail})` : ''}`, {
        hint: `start it with \`sandbox-desk sandbox start ${rec.name}\``,
      });
    }
    return this.live.get(rec.name)?.env ?? this.connect(rec, provider);
  }

  /** Connects to the sandbox's current incarnation (one connect at a time per sandbox). */
  connect(rec: SandboxRecord, provider: SandboxProvider): Promise<SandboxEnvironment> {
    let p = this.connecting.get(rec.name);
    if (!p) {
      p = this.doConnect(rec, provider).finally(() => this.connecting.delete(rec.name));
      this.connecting.set(rec.name, p);
    }
    return p;
  }

  private async doConnect(rec: SandboxRecord, provider: SandboxProvider): Promise<SandboxEnvironment> {
    const declared = this.effectiveDeclaredCwd(rec, provider);
    const cachedHome = rec.home && rec.homeIncarnation ? { home: rec.home, incarnation: rec.homeIncarnation } : null;
    let env = await provider.createEnvironment({ cwd: declared.value, sandbox: sandboxRef(rec), cachedHome });
    // A declared `/home/…` default is only now decidable: the sandbox's own home, or a host path.
    if (provider.isContainer && rec.declaredDefaultCwd?.startsWith('/')) {
      const check = normalizeDeclaredCwd(rec.declaredDefaultCwd, {
        isContainer: true,
        hostHome: this.hostHome,
        sandboxHome: env.home,
        origin: 'default cwd',
        fallback: 'the backend default',
      });
      if (check.warning) {
        this.opts.sandboxes.setDeclaredDefaultCwd(rec.name, null);
        this.addWarning(rec.name, check.warning);
        rec = { ...rec, declaredDefaultCwd: null };
        env = await provider.createEnvironment({
          cwd: this.effectiveDeclaredCwd(rec, provider).value,
          sandbox: sandboxRef(rec),
          cachedHome: { home: env.home, incarnation: env.incarnation },
        });
      }
    }
    if (rec.home !== env.home || rec.homeIncarnation !== env.incarnation) this.opts.sandboxes.setHome(rec.name, env.home, env.incarnation);
    // Whatever was live before belongs to an earlier connect: end it before the new one is used.
    const before = this.live.get(rec.name);
    if (before) this.drop(rec.name, before.env.incarnation === env.incarnation ? 'restarting' : 'changed');
    const scope = new DisposableStore();
    this.scopes.set(env, scope);
    this.live.set(rec.name, { env, scope });
    const previous = this.lastIncarnation.get(rec.name) ?? null;
    this.lastIncarnation.set(rec.name, env.incarnation);
    if (previous !== env.incarnation) this.changed.fire({ sandbox: rec.name, previous, current: env.incarnation });
    return env;
  }

  /** The sandbox is gone from the app (removed): its environment ends and nothing about it is kept. */
  forget(sandbox: string): void {
    this.drop(sandbox, 'removed');
    this.lastIncarnation.delete(sandbox);
    this.pending.delete(sandbox);
  }

  dispose(): void {
    for (const name of [...this.live.keys()]) this.drop(name, 'closed');
    this.changed.dispose();
    this.disposed.dispose();
  }
}

/**
 * A default cwd the user typed (`--default-cwd`, the create dialog) that is relative is refused before
 * anything is made: it has no meaning inside a sandbox, and quietly using another directory instead
 * would start every command somewhere the user did not ask for. (A plugin's declaration is not the
 * user's to fix: that one stays ignored with a warning.)
 */
export function refuseRelativeDefaultCwd(asked: string): void {
  if (asked === '' || asked === '~' || asked.startsWith('/')) return;
  const home = asked.startsWith('~/');
  const rest = home ? asked.slice(2) : asked.replace(/^\.\//, '');
  const like = home ? `/home/USER/${rest}` : `/${rest || 'workspace'}`;
  throw new SandboxDeskError('invalid_input', `default cwd ${JSON.stringify(asked)} is relative`, {
    hint: `give an absolute in-sandbox path (such as ${like}), or ~ for the sandbox user's home`,
  });
}
