import type { GuardContext } from '../cwd/record-guard.js';
import { resolveCommandCwd, type CwdPlan } from '../cwd/resolve-command-cwd.js';
import type { SandboxEnvironment, SandboxProvider } from '../sandbox/provider.js';
import type { ShellPool } from '../exec/shell-pool.js';
import type { SandboxRecord, SandboxStore } from '../store/sandbox-store.js';
import type { SessionRecord, SessionStore } from '../store/session-store.js';
import type { EnvironmentManager } from './environment-manager.js';
import type { ExecContext } from './run-command.js';

/** Where a session stands, with the live environment it stands in (what terminals and file tools anchor at). */
export interface SessionPlan {
  rec: SandboxRecord;
  env: SandboxEnvironment;
  key: string;
  plan: CwdPlan;
  guard: GuardContext & { sandboxRoots: string[] };
}

/** The declared default as read now, `"~"` resolved to the home the environment measured. */
export function resolvedDefault(env: SandboxEnvironment, declared: string): string {
  return declared === '~' ? env.home : declared;
}

/** Roots a sandbox declares as its own: its measured home, and an absolute declared default cwd. */
export function sandboxRoots(env: SandboxEnvironment, declared: string): string[] {
  return [env.home, ...(declared.startsWith('/') ? [declared] : [])];
}

/**
 * A session's position by the same policy commands use: its record, guarded for host paths on
 * containers, else the sandbox default; a step with neither fails closed (`cwd_unresolved`).
 */
export function planSession(input: {
  rec: SandboxRecord;
  env: SandboxEnvironment;
  key: string;
  existing: SessionRecord | undefined;
  isContainer: boolean;
  hostHome: string;
  /** The declared default cwd in effect after connecting. */
  declared: string;
  stepId?: string | undefined;
}): SessionPlan {
  const { rec, env, key, existing } = input;
  const guard = {
    isContainer: input.isContainer,
    hostHome: input.hostHome,
    sandboxRoots: sandboxRoots(env, input.declared),
    mounts: env.mounts,
  };
  const plan = resolveCommandCwd({
    session: { record: existing?.cwd ?? null, recordSource: existing?.source ?? null },
    defaultCwd: resolvedDefault(env, input.declared),
    stepId: input.stepId,
    guard,
  });
  return { rec, env, key, plan, guard };
}

/** What one command runs against: the live environment, the declared default read now, the standing warnings. */
export function commandContext(input: {
  rec: SandboxRecord;
  provider: SandboxProvider;
  env: SandboxEnvironment;
  environments: EnvironmentManager;
  store: { sessions: SessionStore; sandboxes: SandboxStore; transaction<T>(fn: () => T): T };
  shells: ShellPool;
}): ExecContext {
  const { rec, provider, env, environments: envs, store } = input;
  const declared = envs.declaredAfterConnect(rec, provider);
  return {
    sandbox: rec.name,
    env,
    isContainer: provider.isContainer,
    sessions: store.sessions,
    sandboxes: store.sandboxes,
    shells: input.shells,
    hostHome: envs.hostHome,
    sandboxRoots: sandboxRoots(env, declared.value),
    defaultCwd: resolvedDefault(env, declared.value),
    standingWarnings: [...(declared.warning ? [declared.warning] : []), ...envs.takeWarnings(rec.name)],
    reconnect: () => envs.environmentFor(rec, provider, false),
    persist: (writes: () => void) => store.transaction(writes),
  };
}
