import { posix } from 'node:path';
import { cwdPathProblem } from '../shared/cwd-path.js';
import { SandboxDeskError } from '../shared/errors.js';
import type { CwdSource, ExecWarning } from '../shared/exec-result.js';
import { isWindowsPath, normalizeAbsolute } from './host-paths.js';
import { guardRecordedCwd, translateWorkdir, type GuardContext } from './record-guard.js';

export { PATH_MAX } from '../shared/cwd-path.js';

export interface SessionCwdView {
  /** The session's own record (layer a), or null. Never another session's, never the environment's. */
  record: string | null;
  /** How the record came to be: `created` when it was given at the session's creation. */
  recordSource: string | null;
}

export interface CwdPolicyInput {
  workdir?: string | undefined;
  session: SessionCwdView;
  /** The sandbox's default cwd (layer c), `"~"` already resolved. */
  defaultCwd: string;
  /** A request that carries workflow-step ownership fails closed instead of using the default. */
  stepId?: string | undefined;
  guard: GuardContext;
}

export interface CwdPlan {
  /** The directory to try first; the wrapper still checks it is enterable by the sandbox user. */
  target: string;
  source: CwdSource;
  warnings: ExecWarning[];
}

/** Refuses workdirs that cannot be a directory name on Linux (the same check as a session's cwd). */
export function validateWorkdir(workdir: string): void {
  const problem = cwdPathProblem(workdir, 'workdir');
  if (problem) throw new SandboxDeskError('invalid_input', problem.message, { hint: problem.hint });
}

/**
 * The per-command policy: explicit workdir → the session's own record → the sandbox default.
 * Nothing else is consulted — in particular never the environment's shared last-observed cwd.
 */
export function resolveCommandCwd(input: CwdPolicyInput): CwdPlan {
  const plan = planCommandCwd(input);
  // The wrapper walks the target's ancestors by `/`: only an absolute path may reach it.
  if (!plan.target.startsWith('/')) {
    throw new SandboxDeskError('invalid_input', `the working directory ${plan.target} is not an absolute path inside the sandbox`, {
      hint: "give an absolute sandbox path as the workdir, or reset the session's cwd (session create --cwd /path)",
    });
  }
  return plan;
}

function planCommandCwd(input: CwdPolicyInput): CwdPlan {
  const warnings: ExecWarning[] = [];

  // The session's own cwd, host paths guarded. Used directly, or as the base of a relative workdir.
  let sessionCwd: { path: string; source: CwdSource } | null = null;
  if (input.session.record) {
    const guarded = guardRecordedCwd(input.session.record, input.guard);
    if (guarded.warning) warnings.push(guarded.warning);
    if (guarded.path) sessionCwd = { path: guarded.path, source: input.session.recordSource === 'created' ? 'created' : 'session' };
  }

  const unresolved = (why: string): SandboxDeskError =>
    new SandboxDeskError(
      'cwd_unresolved',
      `step ${input.stepId} has no working directory: ${why}; refusing to run in the sandbox default`,
      {
        hint: "pass a workdir, or create the step's session with a cwd (session create --cwd, or --parent)",
        details: { stepId: input.stepId },
      },
    );

  if (input.workdir !== undefined) {
    validateWorkdir(input.workdir);
    if (isWindowsPath(input.workdir)) {
      // Only a declared mount gives a Windows path a meaning inside the sandbox; anything else would
      // reach the wrapper as a name that is neither absolute nor walkable.
      const t = translateWorkdir(input.workdir, input.guard);
      if (!t.path?.startsWith('/')) {
        throw new SandboxDeskError(
          'invalid_input',
          `workdir ${input.workdir} is a Windows host path; it does not exist inside the sandbox`,
          {
            hint: 'give a path inside the sandbox (e.g. /work), or mount the host folder and use it through the mount',
          },
        );
      }
      if (t.warning) warnings.push(t.warning);
      return { target: normalizeAbsolute(t.path), source: 'workdir', warnings };
    }
    if (input.workdir.startsWith('/')) {
      const t = translateWorkdir(input.workdir, input.guard);
      if (t.warning) warnings.push(t.warning);
      return { target: normalizeAbsolute(t.path ?? input.workdir), source: 'workdir', warnings };
    }
    if (!sessionCwd && input.stepId !== undefined)
      throw unresolved(`the workdir ${JSON.stringify(input.workdir)} is relative and the session has no cwd`);
    const base = sessionCwd?.path ?? input.defaultCwd;
    const target = normalizeAbsolute(posix.join(base, input.workdir));
    warnings.push({
      code: 'workdir_relative',
      message: `relative workdir ${input.workdir} resolved against ${sessionCwd ? 'the session cwd' : 'the default cwd'} ${base}: ${target}`,
      asked: input.workdir,
      used: target,
    });
    return { target, source: 'workdir', warnings };
  }

  if (sessionCwd) return { target: sessionCwd.path, source: sessionCwd.source, warnings };
  if (input.stepId !== undefined) {
    throw unresolved(
      input.session.record
        ? `its recorded cwd ${input.session.record} cannot be used here`
        : 'no workdir, no record of its own, no cwd given at its creation',
    );
  }
  return { target: input.defaultCwd, source: 'default', warnings };
}
