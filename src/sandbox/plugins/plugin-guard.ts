import { ISOLATIONS, type Isolation } from '../../shared/isolation.js';
import { SandboxDeskError } from '../../shared/errors.js';
import { guardCheckpoints } from './plugin-guard-checkpoints.js';
import type {
  BackendStatus,
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

/**
 * Everything that crosses from a plugin into the app passes here: lifecycle results are checked for
 * shape, errors are named after the plugin, calls time out, and `execPrefix` must be an argv array.
 * The core then treats a plugin backend exactly like a built-in one — no plugin-specific code past
 * this file.
 */

export interface CallTimeouts {
  /** status, createEnvironment, remove, dispose. */
  shortMs: number;
  /** provision, start, stop: may build images or boot machines. */
  longMs: number;
}

export const DEFAULT_TIMEOUTS: CallTimeouts = { shortMs: 60_000, longMs: 15 * 60_000 };

export interface GuardOptions {
  plugin: string;
  /** null: the transport applies its own timeouts (the isolated host does). */
  timeouts: CallTimeouts | null;
}

function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  try {
    return typeof err === 'string' ? err : (JSON.stringify(err) ?? String(err));
  } catch {
    return String(err);
  }
}

/** A plugin's failure, in the app's words: its own SandboxDeskError passes as is. */
export function pluginFailure(who: string, method: string, err: unknown): SandboxDeskError {
  if (err instanceof SandboxDeskError) return err;
  return new SandboxDeskError('backend_unavailable', `${who}: ${method} failed: ${messageOf(err)}`, {
    hint: "the plugin backend reported an error; check the backend, or `sandbox-desk plugin list` for the plugin's state",
    cause: err,
  });
}

export function timeoutError(who: string, method: string, ms: number): SandboxDeskError {
  return new SandboxDeskError('backend_unavailable', `${who}: ${method} did not answer within ${Math.round(ms / 1000)} s`, {
    hint: 'the plugin or its backend hangs; retry later, or fix or remove the plugin',
  });
}

export function withTimeout<T>(p: Promise<T>, ms: number | null, onTimeout: () => Error): Promise<T> {
  if (ms === null) return p;
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
    timer.unref?.();
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/**
 * Checks one `execPrefix` answer. null is "not right now" (retryable); a string is refused outright,
 * because running it would mean handing a command line to a shell; anything else must be an argv of
 * strings without NUL. An empty argv would run commands on the host, which only a non-container
 * backend may mean.
 */
export function checkedPrefix(value: unknown, who: string, isContainer: boolean): string[] {
  if (value === null || value === undefined) {
    throw new SandboxDeskError('backend_unavailable', `${who} cannot run commands right now (execPrefix returned ${String(value)})`, {
      hint: 'this is usually temporary (the sandbox is starting or reconnecting): retry in a moment',
    });
  }
  if (typeof value === 'string') {
    throw new SandboxDeskError(
      'refused',
      `${who}: execPrefix returned a string (${JSON.stringify(value.slice(0, 80))}), not an argv array; refusing to hand it to a shell`,
      {
        hint: 'the plugin must return an array such as ["podman", "exec", "-i", id]; report this to the plugin\'s author',
      },
    );
  }
  if (!Array.isArray(value) || !value.every((w) => typeof w === 'string')) {
    throw new SandboxDeskError('refused', `${who}: execPrefix must return an array of strings, got ${describe(value)}`, {
      hint: "the plugin is broken; report this to the plugin's author",
    });
  }
  if (value.some((w) => w.includes('\0'))) {
    throw new SandboxDeskError('refused', `${who}: execPrefix returned an argument containing a NUL byte`, {
      hint: "the plugin is broken; report this to the plugin's author",
    });
  }
  if (value.length === 0 ? isContainer : value[0] === '') {
    throw new SandboxDeskError(
      'refused',
      `${who}: execPrefix returned ${value.length === 0 ? 'an empty argv, which would run commands on the host' : 'an empty program name'}`,
      {
        hint: "the plugin is broken; report this to the plugin's author",
      },
    );
  }
  return [...value];
}

function describe(v: unknown): string {
  try {
    return JSON.stringify(v)?.slice(0, 120) ?? typeof v;
  } catch {
    return `a ${typeof v}`;
  }
}

const STATES = new Set(['running', 'paused', 'stopped', 'missing']);

function checkedStatus(v: unknown, who: string): BackendStatus {
  const s = v as Partial<BackendStatus> | null;
  if (!s || typeof s !== 'object' || !STATES.has(s.state as string)) {
    throw new SandboxDeskError(
      'backend_unavailable',
      `${who}: status returned ${describe(v)}, not {state: running|stopped|missing, incarnation}`,
      {
        hint: "the plugin is broken; report this to the plugin's author",
      },
    );
  }
  const incarnation = typeof s.incarnation === 'string' && s.incarnation ? s.incarnation : null;
  if (s.state === 'running' && !incarnation) {
    throw new SandboxDeskError('backend_unavailable', `${who}: status says running but gives no incarnation`, {
      hint: "the plugin is broken; report this to the plugin's author",
    });
  }
  const out: BackendStatus = { state: s.state as BackendStatus['state'], incarnation };
  if (typeof s.detail === 'string') out.detail = s.detail;
  if (typeof s.since === 'string' && !Number.isNaN(Date.parse(s.since))) out.since = s.since;
  if (s.details && typeof s.details === 'object') {
    // Plain data only: inspect shows it and the contract carries it.
    out.details = Object.fromEntries(
      Object.entries(s.details).filter(([, x]) => x === null || ['string', 'number', 'boolean'].includes(typeof x)),
    );
  }
  return out;
}

function checkedProvision(v: unknown, who: string): ProvisionResult {
  const r = (v ?? {}) as Partial<ProvisionResult>;
  const strOrNull = (x: unknown): string | null => (typeof x === 'string' && x ? x : null);
  if (typeof v !== 'object' || v === null)
    throw new SandboxDeskError('backend_unavailable', `${who}: provision returned ${describe(v)}, not {backendRef, user, image}`);
  return { backendRef: strOrNull(r.backendRef), user: strOrNull(r.user), image: strOrNull(r.image) };
}

function isAbs(x: unknown): x is string {
  return typeof x === 'string' && x.startsWith('/') && !x.includes('\0') && !x.includes('\n');
}

/**
 * A plugin's environment as the app sees it: identity and paths read once and checked, `"~"` resolved
 * to the measured home even if the plugin forgot, and every `execPrefix` answer checked.
 */
export class GuardedEnvironment implements SandboxEnvironment {
  cwd: string | null = null;
  readonly user: string | null;
  readonly home: string;
  readonly defaultCwd: string;
  readonly mounts: readonly Mount[];
  readonly incarnation: string;
  readonly joinsArgv: boolean;

  constructor(
    private readonly inner: SandboxEnvironment,
    private readonly who: string,
    private readonly isContainer: () => boolean,
  ) {
    const home = inner.home;
    if (!isAbs(home)) {
      throw new SandboxDeskError(
        'backend_unavailable',
        `${who}: the environment's home ${describe(home)} is not an absolute in-sandbox path`,
        {
          hint: 'the plugin must measure the home after connecting (ctx.helpers.measureHome)',
        },
      );
    }
    this.home = home;
    const cwd = inner.defaultCwd;
    this.defaultCwd = isAbs(cwd) ? cwd : home;
    this.user = typeof inner.user === 'string' && inner.user ? inner.user : null;
    this.mounts = Array.isArray(inner.mounts) ? inner.mounts.filter((m: Mount) => m && isAbs(m.hostPath) && isAbs(m.sandboxPath)) : [];
    const inc = inner.incarnation;
    if (typeof inc !== 'string' || !inc)
      throw new SandboxDeskError('backend_unavailable', `${who}: the environment has no incarnation`, {
        hint: "the plugin is broken; report this to the plugin's author",
      });
    this.incarnation = inc;
    this.joinsArgv = inner.joinsArgv === true;
  }

  execPrefix(opts: ExecPrefixOptions): string[] {
    let value: unknown;
    try {
      value = this.inner.execPrefix({ user: opts.user, interactive: opts.interactive });
    } catch (err) {
      throw pluginFailure(this.who, 'execPrefix', err);
    }
    return checkedPrefix(value, this.who, this.isContainer());
  }

  getTempDir(): string {
    try {
      const t = this.inner.getTempDir();
      return isAbs(t) ? t : '/tmp';
    } catch {
      return '/tmp';
    }
  }
}

/** Wraps a plugin's provider; `name` is read once, at registration, and never again. */
export class GuardedProvider implements SandboxProvider {
  readonly name: string;
  private readonly who: string;

  constructor(
    readonly inner: SandboxProvider,
    name: string,
    private readonly opts: GuardOptions,
  ) {
    this.name = name;
    this.who = `backend ${name} (plugin ${opts.plugin})`;
  }

  get isContainer(): boolean {
    try {
      return this.inner.isContainer !== false; // unknown: treat host paths as meaningless, the safe side
    } catch {
      return true;
    }
  }

  /** The plugin's declared isolation when it is one the app knows (else the default from isContainer). */
  get isolation(): Isolation | undefined {
    try {
      const v = this.inner.isolation;
      return ISOLATIONS.includes(v as Isolation) ? v : undefined;
    } catch {
      return undefined;
    }
  }

  get supportsStreams(): boolean {
    try {
      return this.inner.supportsStreams === true;
    } catch {
      return false;
    }
  }

  /** Forwarded as is: the core reads it defensively on every command and warns about bad values. */
  get defaultCwd(): string | undefined {
    return this.inner.defaultCwd;
  }

  get description(): string {
    try {
      const d = this.inner.description;
      return typeof d === 'string' ? d.slice(0, 200) : `a ${this.name} sandbox (plugin ${this.opts.plugin})`;
    } catch {
      return `a ${this.name} sandbox (plugin ${this.opts.plugin})`;
    }
  }

  private async call<T>(method: string, long: boolean, fn: () => Promise<unknown>, check: (v: unknown) => T): Promise<T> {
    const ms = this.opts.timeouts ? (long ? this.opts.timeouts.longMs : this.opts.timeouts.shortMs) : null;
    let value: unknown;
    try {
      value = await withTimeout(Promise.resolve().then(fn), ms, () => timeoutError(this.who, method, ms!));
    } catch (err) {
      throw pluginFailure(this.who, method, err);
    }
    return check(value);
  }

  provision(spec: ProvisionSpec, ctx?: LifecycleContext): Promise<ProvisionResult> {
    return this.call(
      'provision',
      true,
      () => this.inner.provision(spec, ctx),
      (v) => checkedProvision(v, this.who),
    );
  }

  start(ref: SandboxRef, ctx?: LifecycleContext): Promise<void> {
    return this.call(
      'start',
      true,
      () => this.inner.start(ref, ctx),
      () => undefined,
    );
  }

  stop(ref: SandboxRef, ctx?: LifecycleContext): Promise<void> {
    return this.call(
      'stop',
      true,
      () => this.inner.stop(ref, ctx),
      () => undefined,
    );
  }

  remove(ref: SandboxRef, opts: { force: boolean }): Promise<void> {
    return this.call(
      'remove',
      false,
      () => this.inner.remove(ref, opts),
      () => undefined,
    );
  }

  status(ref: SandboxRef): Promise<BackendStatus> {
    return this.call(
      'status',
      false,
      () => this.inner.status(ref),
      (v) => checkedStatus(v, this.who),
    );
  }

  createEnvironment(opts: CreateEnvironmentOptions): Promise<SandboxEnvironment> {
    return this.call(
      'createEnvironment',
      false,
      () => this.inner.createEnvironment(opts),
      (v) => {
        if (!v || typeof v !== 'object' || typeof (v as SandboxEnvironment).execPrefix !== 'function') {
          throw new SandboxDeskError(
            'backend_unavailable',
            `${this.who}: createEnvironment returned ${describe(v)}, not an environment with execPrefix()`,
            {
              hint: "the plugin is broken; report this to the plugin's author",
            },
          );
        }
        return new GuardedEnvironment(v as SandboxEnvironment, this.who, () => this.isContainer);
      },
    );
  }

  private guardedCheckpoints: CheckpointCapability | undefined;

  /** The plugin's checkpoints, each call timed and its answer checked (plugin-guard-checkpoints.ts); absent when it has none. */
  get checkpoints(): CheckpointCapability | undefined {
    let inner: CheckpointCapability | undefined;
    try {
      inner = this.inner.checkpoints;
    } catch {
      return undefined;
    }
    if (!inner || typeof inner !== 'object') return undefined;
    return (this.guardedCheckpoints ??= guardCheckpoints(
      inner,
      this.who,
      (method, long, fn, check) => this.call(`checkpoints.${method}`, long, fn, check),
      checkedProvision,
    ));
  }

  async dispose(): Promise<void> {
    if (typeof this.inner.dispose !== 'function') return;
    await this.call(
      'dispose',
      false,
      () => this.inner.dispose!(),
      () => undefined,
    ).catch(() => undefined);
  }
}
