import { userInfo } from 'node:os';
import { resolveCommandCwd } from '../cwd/resolve-command-cwd.js';
import type { GuardContext } from '../cwd/record-guard.js';
import { SandboxDeskError } from '../shared/errors.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import type { SandboxStore } from '../store/sandbox-store.js';
import { DEFAULT_SESSION, type SessionStore } from '../store/session-store.js';
import type { RawRun, StartInfo } from '../exec/command-capture.js';
import type { ExecMode, ExecResult, ExecWarning, OutputCut } from '../shared/exec-result.js';
import { runOneshot } from '../exec/oneshot-runner.js';
import { streamText } from '../exec/stream-text.js';
import type { AttachedRunner, ShellPool } from '../exec/shell-pool.js';
import type { SessionTurn } from './session-turns.js';

export interface ExecRequest {
  command: string;
  session?: string | undefined;
  /** Only used when the session does not exist yet: it is created as this session's child. */
  parent?: string | undefined;
  workdir?: string | undefined;
  stepId?: string | undefined;
  timeoutMs: number;
  mode: ExecMode;
  user?: string | undefined;
  signal?: AbortSignal | undefined;
  maxOutputBytes: number;
  /**
   * The call's place in its session's line (SessionTurns), taken when it arrived: the command is
   * planned and run only once the turn came, and the wait counts against `timeoutMs`.
   */
  turn?: SessionTurn | undefined;
}

export interface ExecContext {
  sandbox: string;
  env: SandboxEnvironment;
  isContainer: boolean;
  sessions: SessionStore;
  sandboxes: SandboxStore;
  shells: ShellPool;
  hostHome: string;
  /** Roots the sandbox declared as its own (its home, an absolute declared default cwd). */
  sandboxRoots: string[];
  /**
   * Where a session with no record of its own starts: the declared default cwd as read for *this*
   * command (a backend may change its declaration), with `"~"` resolved to the measured home.
   */
  defaultCwd: string;
  /** Warnings the sandbox carries into every result (e.g. an ignored default cwd declaration). */
  standingWarnings: ExecWarning[];
  /** Runs the writes of one command in one transaction. */
  persist: (writes: () => void) => void;
  /**
   * Asks the backend again for the live environment, after a shell died under us (restart, stop); throws
   * `sandbox_not_running` / `sandbox_missing` (with what to do) when the sandbox no longer runs.
   */
  reconnect: () => Promise<SandboxEnvironment>;
}

export interface ExecOutcome extends ExecResult {
  stdoutBytes: Buffer;
  stderrBytes: Buffer;
}

const DENIED_RE = /Permission denied|Operation not permitted/;

export function countDenied(stderr: string): number {
  return stderr.split('\n').filter((l) => DENIED_RE.test(l)).length;
}

function enterWarning(asked: string, start: StartInfo, user: string): ExecWarning | null {
  switch (start.why) {
    case 'ok':
      return null;
    case 'missing':
      return { code: 'cwd_missing', message: `cwd ${asked} is missing on disk; ran in ${start.used}`, asked, used: start.used };
    case 'denied':
      return {
        code: 'cwd_denied',
        message: `cwd ${asked} exists but is not accessible to this user (${user}); ran in ${start.used}`,
        asked,
        used: start.used,
      };
    case 'notdir':
      return { code: 'cwd_not_directory', message: `cwd ${asked} is not a directory; ran in ${start.used}`, asked, used: start.used };
    case 'unenterable':
      return {
        code: 'cwd_unenterable',
        message: `neither ${asked}, its ancestors nor the temp dir could be entered; ran in ${start.used}`,
        asked,
        used: start.used,
      };
  }
}

/**
 * The largest command accepted. Commands travel on the wrapper's stdin (never as an argument, where
 * Linux caps one argument at 128 KiB), and bash reads that line a byte at a time (1-6 s per MiB):
 * past this a script belongs in a file.
 */
export const MAX_COMMAND_BYTES = 4 * 1024 * 1024;

/** Refuses commands no sandbox shell can run, saying what was wrong and what to do. */
export function validateCommand(command: unknown): asserts command is string {
  if (typeof command !== 'string' || command.trim() === '') {
    throw new SandboxDeskError('invalid_input', 'command is empty', { hint: 'give the command after --' });
  }
  if (command.includes('\0')) throw new SandboxDeskError('invalid_input', 'command contains a NUL byte, which bash cannot carry');
  const bytes = Buffer.byteLength(command);
  if (bytes > MAX_COMMAND_BYTES) {
    throw new SandboxDeskError('invalid_input', `command is ${bytes} bytes; the limit is ${MAX_COMMAND_BYTES} bytes (4 MiB)`, {
      hint: 'write the script to a file in the sandbox (write_file) and run that file',
    });
  }
}

/** How long after a first look at a sandbox whose command was cut off the second look is taken. */
const STOP_SETTLE_MS = 250;

const STOPPED_CODES: readonly string[] = ['sandbox_not_running', 'sandbox_missing'];

/**
 * Throws when the sandbox stopped or went away while the command ran, naming what happened; the
 * output the command printed before that is kept in the error's details.
 */
async function assertStillRunning(ctx: ExecContext, raw: RawRun): Promise<void> {
  let stopped: SandboxDeskError | null = null;
  // Two looks: the backend may learn of a kill a moment after the stream ended, and `docker rm -f`
  // is a kill first and a removal a moment later (then the removal is what to tell).
  for (let look = 0; look < 2 && stopped?.code !== 'sandbox_missing'; look++) {
    if (look > 0) await new Promise((r) => setTimeout(r, STOP_SETTLE_MS));
    try {
      await ctx.reconnect();
    } catch (err) {
      if (!(err instanceof SandboxDeskError) || !STOPPED_CODES.includes(err.code)) throw err;
      stopped = err;
    }
  }
  if (!stopped) return;
  const stdout = streamText(raw.stdout, raw.truncated.stdout);
  const stderr = streamText(raw.stderr, raw.truncated.stderr);
  throw new SandboxDeskError(
    stopped.code,
    `the command was cut off: ${stopped.message}; the sandbox stopped while the command ran (killed, stopped or removed outside Sandbox Desk)`,
    {
      ...(stopped.hint ? { hint: stopped.hint } : {}),
      details: {
        exitCode: raw.processExit,
        stdout: stdout.text,
        stderr: stderr.text,
        encoding: { stdout: stdout.encoding, stderr: stderr.encoding },
      },
    },
  );
}

/** A wait for the person's prompt shorter than this is not worth a warning. */
const TERMINAL_WAIT_REPORT_MS = 250;

/** Runs the command in the shell of the terminal attached to the session; reports a wait for the person's command. */
export async function runAttached(
  runner: AttachedRunner,
  req: Parameters<AttachedRunner['run']>[0],
  session: string,
  warnings: ExecWarning[],
): Promise<RawRun> {
  const raw = await runner.run(req);
  const waited = `${(raw.waitedMs / 1000).toFixed(1)} s`;
  if (!raw.start && raw.killed) {
    throw new SandboxDeskError(
      'cancelled',
      `the command ${raw.killed === 'timeout' ? `timed out after ${req.timeoutMs / 1000} s` : 'was interrupted'} while it waited for the person's command in the terminal attached to session ${session}; it did not run`,
      { hint: 'let the command in that terminal finish (or press Ctrl+C there), or give a longer timeout' },
    );
  }
  if (raw.waitedMs >= TERMINAL_WAIT_REPORT_MS) {
    warnings.push({
      code: 'terminal_busy',
      message: `waited ${waited} for the person's command in the terminal attached to session ${session} to give the prompt back`,
    });
  }
  return raw;
}

/**
 * Runs one command for one session with the whole working-directory policy: plan the cwd (and fail
 * closed for steps), run it, then record only what was measured.
 */
export async function runCommand(ctx: ExecContext, req: ExecRequest): Promise<ExecOutcome> {
  const t0 = performance.now();
  validateCommand(req.command);

  const key = req.session ?? DEFAULT_SESSION;
  // Wait for this session's earlier calls first: everything below reads the record they write.
  let queuedMs = 0;
  let timeoutMs = req.timeoutMs;
  if (req.turn) {
    const outcome = await req.turn.ready;
    queuedMs = req.turn.queuedMs;
    timeoutMs = Math.floor(req.timeoutMs - (performance.now() - req.turn.enteredAt));
    if (outcome !== 'go' || timeoutMs <= 0) return notRun(ctx, req, key, outcome === 'interrupt' ? 'interrupt' : 'timeout', queuedMs, t0);
  }
  const now = (): string => new Date().toISOString();
  let session = ctx.sessions.get(ctx.sandbox, key);
  // A new child session gets its cwd directly, now, from its parent's record — never by looking the
  // parent up later.
  let initialCwd: string | null = null;
  if (!session && req.parent !== undefined) {
    const parent = ctx.sessions.get(ctx.sandbox, req.parent);
    if (!parent)
      throw new SandboxDeskError('not_found', `parent session ${JSON.stringify(req.parent)} does not exist in sandbox ${ctx.sandbox}`);
    initialCwd = parent.cwd;
  }

  const guard: GuardContext = {
    isContainer: ctx.isContainer,
    hostHome: ctx.hostHome,
    sandboxRoots: ctx.sandboxRoots,
    mounts: ctx.env.mounts,
  };
  const plan = resolveCommandCwd({
    workdir: req.workdir,
    session: session
      ? { record: session.cwd, recordSource: session.source }
      : { record: initialCwd, recordSource: initialCwd ? 'created' : null },
    defaultCwd: ctx.defaultCwd,
    stepId: req.stepId,
    guard,
  });
  // Planning passed: only now does the request leave a trace.
  session ??= ctx.sessions.ensure(ctx.sandbox, key, { parent: req.parent ?? null, cwd: initialCwd, at: now() });

  const warnings: ExecWarning[] = [...ctx.standingWarnings, ...plan.warnings];
  const runReq = {
    target: plan.target,
    tmpDir: ctx.env.getTempDir(),
    command: req.command,
    timeoutMs,
    signal: req.signal,
    maxOutputBytes: req.maxOutputBytes,
  };
  const user = req.user ?? ctx.env.user ?? undefined;

  let mode: ExecMode = req.mode;
  let raw: RawRun | null = null;
  // A terminal attached to the session: its shell is the session's shell (session-attach.ts).
  const attached = mode === 'shell' ? ctx.shells.attachedTo(ctx.sandbox, key, user, ctx.env.incarnation) : null;
  if (attached) raw = await runAttached(attached, { ...runReq, workdir: plan.source === 'workdir' }, key, warnings);
  // A shell can die between commands (the previous one ran `exit`): a command that never started in
  // it is safe to send once more, to a fresh shell.
  let env = ctx.env;
  for (let attempt = 0; mode === 'shell' && !attached && attempt < 2 && !(raw?.start || raw?.killed); attempt++) {
    // The sandbox may have been restarted under the dead shell: ask the backend before reopening.
    if (attempt > 0) env = await ctx.reconnect();
    let acquired: Awaited<ReturnType<ShellPool['acquire']>>;
    try {
      acquired = await ctx.shells.acquire(ctx.sandbox, key, user, env);
    } catch (err) {
      mode = 'oneshot';
      warnings.push({
        code: 'shell_fallback',
        message: `session shell could not be opened (${err instanceof Error ? err.message : String(err)}); ran one-shot`,
      });
      break;
    }
    if (acquired.dropped) {
      warnings.push({
        code: 'environment_recreated',
        message: "the sandbox was restarted or replaced since this session's last command; a new session shell was started",
      });
      if (acquired.dropped.lastCwd) ctx.sessions.fillIfEmpty(ctx.sandbox, key, acquired.dropped.lastCwd, now());
    }
    raw = await acquired.shell.run(runReq);
  }
  if (mode === 'oneshot') raw = await runOneshot(env, user, runReq);
  if (!raw) throw new SandboxDeskError('internal', 'no runner ran the command');

  if (!raw.start) {
    throw new SandboxDeskError(
      'backend_unavailable',
      `the command could not be started in sandbox ${ctx.sandbox}${raw.transportError ? `: ${raw.transportError}` : ''}`,
      {
        details: { transportError: raw.transportError, exitCode: raw.processExit },
      },
    );
  }
  // A command cut off without its end frame, by nothing we did: the sandbox itself may have been
  // stopped or removed under it (`docker kill`, `docker rm -f`, a VM's QEMU killed). Say that, not
  // "it replaced the shell".
  if (!raw.end && !raw.killed && !raw.framingBroken) await assertStillRunning(ctx, raw);
  const entered = enterWarning(plan.target, raw.start, user ?? userInfo().username);
  if (entered) warnings.push(entered);

  const stdout = streamText(raw.stdout, raw.truncated.stdout);
  const stderr = streamText(raw.stderr, raw.truncated.stderr);
  const at = now();
  let cwd: string | null = null;
  let cwdObserved = false;
  /** What the session's record becomes, when it changes at all. */
  let record: string | null = null;

  if (raw.framingBroken) {
    warnings.push({
      code: 'framing_broken',
      message: `the wrapper's output framing was broken (${raw.framingBroken}); the bytes were kept as output, the cwd was not observed and the session record is unchanged`,
    });
  } else if (raw.killed) {
    warnings.push({
      code: 'cwd_unobserved',
      message: `command ${raw.killed === 'timeout' ? `timed out after ${req.timeoutMs / 1000} s` : 'was interrupted'}; its cwd was not observed and the session record is unchanged`,
    });
  } else if (!raw.end) {
    warnings.push({
      code: 'cwd_unobserved',
      message:
        'the command ended without reporting its cwd (it replaced the shell, or the stream dropped); the session record is unchanged',
    });
  } else if (raw.end.notUtf8) {
    warnings.push({
      code: 'cwd_not_utf8',
      message: `the command ended in a directory whose name is not valid UTF-8 (${JSON.stringify(raw.end.cwd)}, odd bytes shown as U+FFFD): it cannot be carried as text, so the cwd was not observed and the session record is unchanged`,
    });
  } else if (raw.end.state === 'gone') {
    const keep = raw.start.why === 'ok' ? session.cwd : raw.start.used;
    if (keep && keep !== session.cwd) record = keep;
    warnings.push({
      code: 'cwd_deleted',
      message: `the command ended in ${raw.end.cwd}, which no longer exists; the session stays at ${keep ?? ctx.defaultCwd}`,
      asked: raw.end.cwd,
      ...(keep ? { used: keep } : {}),
    });
  } else {
    cwd = raw.end.cwd;
    cwdObserved = true;
    // A workdir is that command's choice, not the session's — unless the command moved by itself.
    if (plan.source !== 'workdir' || cwd !== raw.start.used) record = cwd;
    env.cwd = cwd;
  }
  const cut = (stream: 'stdout' | 'stderr'): OutputCut | undefined =>
    raw.truncated[stream] ? { keptBytes: raw[stream].length, totalBytes: raw.totalBytes[stream] } : undefined;
  if (raw.truncated.stdout || raw.truncated.stderr) {
    const parts = (['stdout', 'stderr'] as const)
      .filter((s) => raw.truncated[s])
      .map((s) => `${s} kept ${cut(s)!.keptBytes} of ${cut(s)!.totalBytes} bytes`);
    warnings.push({ code: 'output_truncated', message: `output was cut at ${req.maxOutputBytes} bytes per stream: ${parts.join(', ')}` });
  }
  // One transaction (one fsync) for everything this command taught us.
  ctx.persist(() => {
    if (record) ctx.sessions.recordObserved(ctx.sandbox, key, record, at);
    if (cwd) ctx.sandboxes.setLastObservedCwd(ctx.sandbox, cwd, at);
    ctx.sessions.setLastWarnings(ctx.sandbox, key, warnings);
  });

  const exitCode = raw.killed === 'timeout' ? 124 : raw.killed === 'interrupt' ? 130 : (raw.end?.exitCode ?? raw.processExit ?? 255);
  return {
    exitCode,
    stdout: stdout.text,
    stderr: stderr.text,
    encoding: { stdout: stdout.encoding, stderr: stderr.encoding },
    stdoutBytes: raw.stdout,
    stderrBytes: raw.stderr,
    cwd,
    cwdObserved,
    startCwd: raw.start.used,
    cwdSource: plan.source,
    warnings,
    deniedCount: countDenied(raw.stderr.toString('utf8')),
    mode,
    timedOut: raw.killed === 'timeout',
    interrupted: raw.killed === 'interrupt',
    truncated: raw.truncated,
    stdoutTruncated: cut('stdout'),
    stderrTruncated: cut('stderr'),
    durationMs: Math.round((performance.now() - t0) * 10) / 10,
    queuedMs,
    session: key,
    shellPid: raw.start.pid,
  };
}

/**
 * A call whose turn did not come in time (or that was interrupted while waiting): it ran nothing and
 * changes nothing (no session is created, no record or warning written), and says so.
 */
function notRun(ctx: ExecContext, req: ExecRequest, key: string, why: 'timeout' | 'interrupt', queuedMs: number, t0: number): ExecOutcome {
  const waited = `${Math.round(queuedMs) / 1000} s`;
  const warning: ExecWarning =
    why === 'timeout'
      ? {
          code: 'queue_timeout',
          message: `timed out after ${req.timeoutMs / 1000} s, ${waited} of it waiting for earlier commands of session ${key}; this command did not run and nothing changed`,
        }
      : {
          code: 'queue_interrupted',
          message: `interrupted after waiting ${waited} for earlier commands of session ${key}; this command did not run and nothing changed`,
        };
  const existing = ctx.sessions.get(ctx.sandbox, key);
  return {
    exitCode: why === 'timeout' ? 124 : 130,
    stdout: '',
    stderr: '',
    encoding: { stdout: 'utf8', stderr: 'utf8' },
    stdoutBytes: Buffer.alloc(0),
    stderrBytes: Buffer.alloc(0),
    cwd: null,
    cwdObserved: false,
    // It started nowhere: the empty path says so (the session's record is untouched).
    startCwd: '',
    cwdSource: existing?.cwd ? 'session' : 'default',
    warnings: [...ctx.standingWarnings, warning],
    deniedCount: 0,
    mode: req.mode,
    timedOut: why === 'timeout',
    interrupted: why === 'interrupt',
    truncated: { stdout: false, stderr: false },
    durationMs: Math.round((performance.now() - t0) * 10) / 10,
    queuedMs,
    session: key,
  };
}
