import type { ExecWarning } from '../shared/exec-result.js';
import type { Mount } from '../sandbox/provider.js';
import { isHostShapedPath, isUnderPath, translateMountedPath, type HostPathContext } from './host-paths.js';

export interface GuardContext extends HostPathContext {
  isContainer: boolean;
  /**
   * Roots the sandbox declared as its own (the resolved home, an absolute default cwd). A path under one
   * of them is kept even when it looks like a host path, e.g. `/home/agent/project`.
   */
  sandboxRoots: readonly string[];
  mounts: readonly Mount[];
}

export interface GuardedPath {
  /** The path to use, or null when it must not be used. */
  path: string | null;
  warning?: ExecWarning;
}

function declaredRoots(ctx: GuardContext): string[] {
  return ctx.sandboxRoots.filter((r) => r.startsWith('/') && r !== '/');
}

/**
 * Decides whether a recorded cwd may be used on this backend. On a container backend a host path is
 * translated through a declared mount when one covers it, otherwise dropped (with a warning) so the
 * caller falls back to the default — except under a root the sandbox declared, which is kept.
 */
export function guardRecordedCwd(recorded: string, ctx: GuardContext): GuardedPath {
  if (!ctx.isContainer) return { path: recorded };
  if (recorded.startsWith('/') && declaredRoots(ctx).some((root) => isUnderPath(recorded, root))) {
    return { path: recorded };
  }
  const translated = translateMountedPath(recorded, ctx.mounts);
  if (translated) {
    return {
      path: translated,
      warning: {
        code: 'host_path_translated',
        message: `host path ${recorded} translated through a mount to ${translated}`,
        asked: recorded,
        used: translated,
      },
    };
  }
  if (!recorded.startsWith('/') || isHostShapedPath(recorded, ctx)) {
    return {
      path: null,
      warning: {
        code: 'host_path_dropped',
        message: `recorded cwd ${recorded} is a host path, which does not exist in this container; it was not used`,
        asked: recorded,
      },
    };
  }
  return { path: recorded };
}

/** An explicit workdir is the caller's choice: only translated through a mount, never dropped. */
export function translateWorkdir(workdir: string, ctx: GuardContext): GuardedPath {
  if (!ctx.isContainer) return { path: workdir };
  if (declaredRoots(ctx).some((root) => isUnderPath(workdir, root))) return { path: workdir };
  const translated = translateMountedPath(workdir, ctx.mounts);
  if (!translated) return { path: workdir };
  return {
    path: translated,
    warning: {
      code: 'host_path_translated',
      message: `host path ${workdir} translated through a mount to ${translated}`,
      asked: workdir,
      used: translated,
    },
  };
}
