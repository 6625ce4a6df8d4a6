import { ISOLATIONS, type Isolation } from '../../shared/isolation.js';
/**
 * The isolated plugin host: a child Node process that loads ONE plugin and answers the app's calls
 * over IPC (see rpc-protocol.ts). A plugin that crashes or hangs here takes only this process down.
 * Environments go back as data: the exec prefixes are computed here, once per connect, for the
 * sandbox's user and for root, interactive or not.
 */
import { pathToFileURL } from 'node:url';
import { SandboxDeskError } from '../../shared/errors.js';
import { makePluginContext, pluginExport } from '../plugins/plugin-context.js';
import type { CheckpointCapability, ExecPrefixOptions, LifecycleContext, Mount, SandboxEnvironment, SandboxProvider } from '../provider.js';
import type {
  EnvironmentData,
  HostMessage,
  HostRequest,
  LoadRequest,
  LoadResult,
  PrefixAnswer,
  PrefixKey,
  ProviderDescriptor,
} from './rpc-protocol.js';

const providers = new Map<string, SandboxProvider>();

function send(msg: HostMessage): void {
  process.send?.(msg);
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function read<T>(fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch {
    return fallback;
  }
}

/** The provider's declared default cwd as plain data: only plain values cross, anything else by its type. */
function readDefaultCwd(p: SandboxProvider): ProviderDescriptor['defaultCwd'] {
  try {
    const v = p.defaultCwd as unknown;
    return { value: v === undefined || v === null || ['string', 'number', 'boolean'].includes(typeof v) ? v : `[${typeof v}]` };
  } catch (err) {
    return { error: errorMessage(err) };
  }
}

function describeProvider(p: SandboxProvider): ProviderDescriptor {
  const defaultCwd = readDefaultCwd(p);
  return {
    name: read(() => (typeof p.name === 'string' ? p.name : String(p.name)), '(name threw)'),
    isContainer: read(() => p.isContainer !== false, true),
    ...read(() => (ISOLATIONS.includes(p.isolation as Isolation) ? { isolation: p.isolation } : {}), {}),
    supportsStreams: read(() => p.supportsStreams === true, false),
    defaultCwd,
    description: read(() => (typeof p.description === 'string' ? p.description : ''), ''),
    hasDispose: typeof p.dispose === 'function',
    hasCheckpoints: read(() => typeof p.checkpoints === 'object' && p.checkpoints !== null, false),
  };
}

async function load(req: LoadRequest): Promise<LoadResult> {
  const warnings: string[] = [];
  const logger = {
    info: (m: string) => send({ kind: 'log', level: 'info', message: String(m) }),
    warn: (m: string) => {
      warnings.push(String(m));
      send({ kind: 'log', level: 'warn', message: String(m) });
    },
  };
  const mod: unknown = await import(pathToFileURL(req.entry).href);
  const plugin = pluginExport(mod, req.plugin);
  const { ctx, collected, seal } = makePluginContext({ plugin: req.plugin, dataDir: req.dataDir, isolation: 'host', logger });
  await plugin.register(ctx);
  seal();
  const out: ProviderDescriptor[] = [];
  for (const p of collected) {
    const d = describeProvider(p);
    if (typeof d.name === 'string') providers.set(d.name, p);
    out.push(d);
  }
  return { providers: out, warnings };
}

function prefixAnswer(env: SandboxEnvironment, opts: ExecPrefixOptions): PrefixAnswer {
  try {
    const v = env.execPrefix(opts) as unknown;
    return { value: v };
  } catch (err) {
    return { error: errorMessage(err) };
  }
}

/** The environment as data: everything the app reads from it, with the prefixes precomputed. */
function environmentData(env: SandboxEnvironment): EnvironmentData {
  const prefixes = {} as Record<PrefixKey, PrefixAnswer>;
  for (const [who, user] of [
    ['default', undefined],
    ['root', 'root'],
  ] as const) {
    prefixes[`${who}:i`] = prefixAnswer(env, { user, interactive: true });
    prefixes[`${who}:n`] = prefixAnswer(env, { user, interactive: false });
  }
  return {
    user: read(() => env.user, null),
    home: read(() => env.home, null),
    defaultCwd: read(() => env.defaultCwd, null),
    incarnation: read(() => env.incarnation, null),
    mounts: read(
      () =>
        Array.isArray(env.mounts)
          ? env.mounts.map((m: Mount) => ({ hostPath: m.hostPath, sandboxPath: m.sandboxPath, readOnly: Boolean(m.readOnly) }))
          : [],
      [],
    ),
    tempDir: read(() => env.getTempDir(), '/tmp'),
    joinsArgv: read(() => env.joinsArgv === true, false),
    prefixes,
  };
}

async function call(req: Extract<HostRequest, { kind: 'call' }>): Promise<unknown> {
  const p = providers.get(req.provider);
  if (!p) throw new SandboxDeskError('unknown_backend', `the plugin host has no provider ${req.provider}`);
  const ctx: LifecycleContext = {
    progress: (event) =>
      send({
        id: req.id,
        kind: 'progress',
        event: { step: String(event.step), message: String(event.message), ...(event.level ? { level: event.level } : {}) },
      }),
  };
  const a = req.args as never[];
  switch (req.method) {
    case 'provision':
      return p.provision(a[0]!, ctx);
    case 'start':
      return p.start(a[0]!, ctx);
    case 'stop':
      return p.stop(a[0]!, ctx);
    case 'remove':
      return p.remove(a[0]!, a[1]!);
    case 'status':
      return p.status(a[0]!);
    case 'createEnvironment': {
      const env = await p.createEnvironment(a[0]!);
      if (!env || typeof env !== 'object' || typeof env.execPrefix !== 'function') return env; // the app refuses it with the plugin's name
      return environmentData(env);
    }
    case 'dispose':
      return p.dispose?.();
    case 'checkpoints.memorySupport':
    case 'checkpoints.checkpoint':
    case 'checkpoints.restore':
    case 'checkpoints.fork':
    case 'checkpoints.verify':
    case 'checkpoints.removeCheckpoint':
    case 'checkpoints.pause':
    case 'checkpoints.resume': {
      const cp = p.checkpoints;
      if (!cp) throw new SandboxDeskError('unsupported', `backend ${req.provider} has no checkpoints capability`);
      const m = req.method.slice('checkpoints.'.length) as keyof typeof cp;
      const fn = (cp as unknown as Record<string, (this: CheckpointCapability, ...args: unknown[]) => Promise<unknown>>)[m];
      if (typeof fn !== 'function') throw new SandboxDeskError('unsupported', `backend ${req.provider}'s checkpoints have no ${m}()`);
      // Long calls get the progress context as their last argument, like lifecycle calls.
      return fn.call(cp, ...a, ...(['checkpoint', 'restore', 'fork'].includes(m) ? [ctx] : []));
    }
    default:
      throw new SandboxDeskError('invalid_input', `unknown method ${String(req.method)}`);
  }
}

process.on('message', (raw: unknown) => {
  const req = raw as HostRequest;
  if (req.kind === 'ping') return send({ id: req.id, kind: 'result', value: 'pong' });
  const work = req.kind === 'load' ? load(req.load) : call(req);
  work.then(
    (value) => {
      // Every answer refreshes the app's copy of the declaration: it may change, and reading it in the
      // app must stay free of IPC (it is read on every command).
      const p = req.kind === 'call' ? providers.get(req.provider) : undefined;
      send({ id: req.id, kind: 'result', value: value === undefined ? null : value, ...(p ? { defaultCwd: readDefaultCwd(p) } : {}) });
    },
    (err: unknown) => {
      const e = err instanceof SandboxDeskError ? err : null;
      send({
        id: req.id,
        kind: 'error',
        error: {
          code: e?.code ?? 'backend_unavailable',
          message: errorMessage(err),
          ...(e?.hint ? { hint: e.hint } : {}),
          ...(e ? {} : { plain: true }),
        },
      });
    },
  );
});
// The app going away ends the host: nothing of a plugin outlives the app that loaded it.
process.on('disconnect', () => process.exit(0));
