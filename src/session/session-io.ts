import { isHostOnly, isHostShapedPath, isUnderPath, isWindowsPath, translateMountedPath } from '../cwd/host-paths.js';
import { SandboxDeskError } from '../shared/errors.js';
import { assertPathComponents } from '../shared/file-names.js';
import { listSandboxDir, readSandboxFile, readSandboxFileRange, type DirEntry } from '../exec/sandbox-files.js';
import { TerminalSession } from '../exec/terminal.js';
import {
  checkUpload,
  makeSandboxDirectory,
  startDownload,
  startUpload,
  writeSandboxFile,
  type DownloadSource,
  type UploadSink,
} from '../exec/file-transfer.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { toDisposable, type DisposableStore } from '../shared/lifecycle.js';
import type { SandboxStore } from '../store/sandbox-store.js';
import type { SessionStore } from '../store/session-store.js';
import type { SessionPlan } from './session-plan.js';
import { TerminalRegistry, type HeldTerminal } from './terminal-registry.js';
import type { SessionAttach } from './session-attach.js';
import { recordTerminal } from './terminal-cast.js';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { TerminalInfo } from '../shared/terminal-types.js';

/** Where terminals are recorded (issue 16) and whom to tell; absent: terminals are not recorded. */
export interface TerminalRecordingOptions {
  /** `<dataDir>/recordings`. */
  dir: string;
  /** Read at each open (config `replay.record`). */
  enabled(): boolean;
  /** A recording stopped early (disk full): the terminal keeps working. */
  onWarning?(sandbox: string, message: string): void;
  /** A terminal recording started or ended. */
  onChanged?(sandbox: string): void;
}

/** What a session's terminals and files need from the core (the facade provides it). */
export interface SessionIoHost {
  /** Where the session stands, in the live environment (connecting, or failing, as commands do). */
  sessionPlan(sandbox: string, session: string | undefined, stepId?: string): Promise<SessionPlan>;
  /** The store of the environment's incarnation: a terminal ends with it. */
  scopeOf(env: SandboxEnvironment): DisposableStore | null;
  store: { sessions: SessionStore; sandboxes: SandboxStore; transaction<T>(fn: () => T): T };
}

function hostPathError(path: string, sandbox: string): SandboxDeskError {
  return new SandboxDeskError('invalid_input', `${path} is a host path; it does not exist inside sandbox ${sandbox}`, {
    hint: 'use a path inside the sandbox, or mount the host directory',
  });
}

/**
 * A session's interactive side: its terminals and its files. Both stand where the session stands —
 * the cwd planned by the same policy as its commands (`sessionPlan`) — so a human in a terminal, an
 * agent's shell and an agent's file tools all anchor at one place.
 */
export class SessionIo {
  private readonly terminals = new TerminalRegistry<TerminalSession>();
  /** Set by `closeAll`: the store is about to close, so a dying terminal's cwd report is dropped. */
  private closed = false;

  constructor(
    private readonly desk: SessionIoHost,
    /** `scrollbackBytes`: output each terminal keeps for a window that reattaches (config `terminal.scrollbackBytes`). */
    private readonly opts: {
      scrollbackBytes?: number | undefined;
      recording?: TerminalRecordingOptions | undefined;
      /** Joins each terminal to its session as the session's shell (issue 34 item 3); absent: terminals are plain. */
      attach?: SessionAttach | undefined;
    } = {},
  ) {}

  /** Terminals being recorded now, per sandbox (their casts are not trimmed or removed while open). */
  private readonly recorded = new Map<string, Set<string>>();

  /** The ids of a sandbox's terminals whose casts are being written now. */
  recordingTerminals(sandbox: string): string[] {
    return [...(this.recorded.get(sandbox) ?? [])];
  }

  /** Issue 16: every terminal as asciicast v2 under `<recordings>/<sandbox>/terminals/<id>.cast`, while recording is on. */
  private record(terminal: TerminalSession, sandbox: string, session: string, castId: string): void {
    const rec = this.opts.recording;
    if (!rec || !rec.enabled()) return;
    const ids = this.recorded.get(sandbox) ?? new Set<string>();
    this.recorded.set(sandbox, ids);
    ids.add(castId);
    recordTerminal(terminal, {
      file: join(rec.dir, sandbox, 'terminals', `${castId}.cast`),
      sandbox,
      session,
      onWarning: (m) => rec.onWarning?.(sandbox, m),
      onEnd: () => {
        ids.delete(castId);
        rec.onChanged?.(sandbox);
      },
    });
    rec.onChanged?.(sandbox);
  }

  /**
   * Opens an interactive terminal for a session: a local PTY running the sandbox's exec prefix and a
   * login shell, started in the session's cwd (same policy as commands). Its shell becomes the
   * session's shell (SessionAttach): the session's commands run in it, in view. A session has one such
   * shell: opening a terminal on a session that has one open gives that terminal (another view of it).
   * Each prompt reports the shell's measured cwd, which becomes the session's record.
   */
  async openTerminal(input: {
    sandbox: string;
    session?: string | undefined;
    cols: number;
    rows: number;
  }): Promise<{ terminal: TerminalSession; session: string; cwd: string }> {
    return this.startTerminal(input, undefined);
  }

  private async startTerminal(
    input: { sandbox: string; session?: string | undefined; cols: number; rows: number },
    reopen: { id: string; scrollback: Buffer } | undefined,
  ): Promise<{ terminal: TerminalSession; session: string; cwd: string }> {
    const { rec, env, key, plan } = await this.desk.sessionPlan(input.sandbox, input.session);
    if (this.closed)
      throw new SandboxDeskError('service_unavailable', 'the service is shutting down: no new terminal; open it again once it is back');
    // A session has one terminal (attached to its shell): a second open gives the same one — except
    // while a restore reopens the terminal it held (listed `restarting`), which is this very call.
    const open = reopen ? undefined : this.terminals.list(rec.name).find((t) => t.session === key && !t.restarting);
    if (open) return { terminal: this.terminals.get(open.terminalId), session: key, cwd: open.startedIn };
    this.desk.store.sessions.ensure(rec.name, key, { parent: null, cwd: null, at: new Date().toISOString() });
    const terminal = new TerminalSession(env, {
      target: plan.target,
      cols: input.cols,
      rows: input.rows,
      scrollbackBytes: this.opts.scrollbackBytes,
      reopen,
    });
    terminal.onCwd((cwd) => {
      if (this.closed) return;
      // The prompt after an agent's command, or an empty line, reports what is recorded already: recorded once.
      if (this.desk.store.sessions.get(rec.name, key)?.cwd === cwd) return;
      const at = new Date().toISOString();
      env.cwd = cwd;
      this.desk.store.transaction(() => {
        this.desk.store.sessions.recordObserved(rec.name, key, cwd, at);
        this.desk.store.sandboxes.setLastObservedCwd(rec.name, cwd, at);
      });
    });
    this.terminals.add(terminal, { sandbox: rec.name, session: key, startedIn: plan.target });
    this.opts.attach?.attach(terminal, {
      sandbox: rec.name,
      session: key,
      user: env.user ?? undefined,
      env,
      cwd: () => this.desk.store.sessions.get(rec.name, key)?.cwd ?? plan.target,
    });
    // A reopened terminal is a new recording (a cast file has one header): under a cast id of its own.
    this.record(terminal, rec.name, key, reopen ? randomBytes(12).toString('hex') : terminal.id);
    // The terminal's shell lives in this incarnation: a restart or stop ends it (no shell of a dead sandbox).
    const scope = this.desk.scopeOf(env);
    const registration = scope?.add(toDisposable(() => terminal.dispose()));
    terminal.onExit(() => {
      if (registration) scope?.delete(registration);
    });
    return { terminal, session: key, cwd: plan.target };
  }

  /**
   * Before a restore replaces the sandbox: its open terminals are kept by id (listed as `restarting`;
   * their viewers are told to come back, not that the shell exited). Their shells end with the old
   * sandbox; `reopenTerminals` starts them again in the new one.
   */
  holdTerminals(sandbox: string): HeldTerminal[] {
    return this.terminals.hold(sandbox, (t) => t.scrollbackSnapshot());
  }

  /** true while the terminal's sandbox is being restored (its stream closes as `restarting`). */
  isRestarting(terminalId: string): boolean {
    return this.terminals.isHeld(terminalId);
  }

  /**
   * The held terminals again, in the restored sandbox: the same ids, sizes and scrollback, a new shell
   * in the session's cwd (the restored record). One that cannot be reopened is given up (its viewer
   * then reads it as gone); the others still come back. Returns the ids reopened and why others were not.
   */
  async reopenTerminals(held: HeldTerminal[]): Promise<{ reopened: string[]; failed: Array<{ terminalId: string; error: string }> }> {
    const reopened: string[] = [];
    const failed: Array<{ terminalId: string; error: string }> = [];
    for (const h of held) {
      // Closed from its tab meanwhile: not reopened.
      if (!this.terminals.isHeld(h.terminalId)) continue;
      try {
        await this.startTerminal(
          { sandbox: h.sandbox, session: h.session, cols: h.cols, rows: h.rows },
          { id: h.terminalId, scrollback: h.scrollback },
        );
        reopened.push(h.terminalId);
      } catch (err) {
        this.terminals.release(h.terminalId);
        failed.push({ terminalId: h.terminalId, error: err instanceof Error ? err.message : String(err) });
      }
    }
    return { reopened, failed };
  }

  /** Gives up held terminals (the restore failed before they could come back). */
  releaseTerminals(held: HeldTerminal[]): void {
    for (const h of held) this.terminals.release(h.terminalId);
  }

  terminal(id: string): TerminalSession {
    return this.terminals.get(id);
  }

  /** A sandbox's open terminals (they live until closed: a window reattaches to them). */
  listTerminals(sandbox: string): TerminalInfo[] {
    return this.terminals.list(sandbox).map((t) => this.withAttach(t));
  }

  terminalInfo(id: string): TerminalInfo {
    return this.withAttach(this.terminals.info(id));
  }

  private withAttach(t: TerminalInfo): TerminalInfo {
    return this.opts.attach ? { ...t, attached: this.opts.attach.isAttached(t.terminalId) } : t;
  }

  /**
   * Ends a terminal's shell: closing its tab, the one way a human ends one. Its session's shell first
   * takes the terminal's environment back (a few seconds at most), so the session continues from it.
   */
  closeTerminal(id: string): void {
    this.terminals.get(id);
    const attach = this.opts.attach;
    if (!attach?.isAttached(id)) return this.terminals.close(id);
    void attach.release(id).finally(() => {
      try {
        this.terminals.close(id);
      } catch {
        // It exited meanwhile: nothing left to close.
      }
    });
  }

  /**
   * The file an agent means: relative paths anchor at the session's cwd (where its shell is), absolute
   * host paths on a container go through a declared mount or are refused. A Windows or `/Users/…` path
   * cannot exist in a Linux sandbox and is refused at once; a Linux-shaped one that merely looks like
   * the host's (under the host home — which is `/root`, a directory every sandbox has, when the app
   * runs as root) is tried in the sandbox, and only called a host path once the sandbox says it is
   * not there.
   */
  private async fileTarget(sandbox: string, path: string, session: string | undefined, stepId: string | undefined) {
    if (path.includes('\0') || /[\n\r]/.test(path)) throw new SandboxDeskError('invalid_input', 'path contains a NUL or newline');
    assertPathComponents(path);
    const { env, key, plan, guard } = await this.desk.sessionPlan(sandbox, session, stepId);
    let target = path;
    let hostShaped = false;
    if (
      guard.isContainer &&
      (path.startsWith('/') || isWindowsPath(path)) &&
      isHostShapedPath(path, guard) &&
      !guard.sandboxRoots.some((r) => isUnderPath(path, r))
    ) {
      const translated = translateMountedPath(path, guard.mounts);
      if (translated) target = translated;
      else if (isHostOnly(path)) throw hostPathError(path, sandbox);
      else hostShaped = true;
    }
    const run = async <T>(op: Promise<T>): Promise<T> => {
      try {
        return await op;
      } catch (err) {
        if (hostShaped && err instanceof SandboxDeskError && err.code === 'not_found') throw hostPathError(path, sandbox);
        throw err;
      }
    };
    return { file: { env, cwd: plan.target }, key, target, cwd: plan.target, run };
  }

  async readFile(input: {
    sandbox: string;
    path: string;
    session?: string;
    stepId?: string;
    maxBytes?: number;
  }): Promise<{ path: string; bytes: Buffer; cwd: string; session: string }> {
    const t = await this.fileTarget(input.sandbox, input.path, input.session, input.stepId);
    const r = await t.run(readSandboxFile(t.file, t.target, input.maxBytes ?? 1024 * 1024));
    return { ...r, cwd: t.cwd, session: t.key };
  }

  /** One chunk of a file, for files larger than one message can carry: `length` bytes at most from `offset`. */
  async readFileRange(input: {
    sandbox: string;
    path: string;
    session?: string;
    stepId?: string;
    offset: number;
    length: number;
  }): Promise<{ path: string; bytes: Buffer; size: number; cwd: string; session: string }> {
    const t = await this.fileTarget(input.sandbox, input.path, input.session, input.stepId);
    const r = await t.run(readSandboxFileRange(t.file, t.target, input.offset, input.length));
    return { ...r, cwd: t.cwd, session: t.key };
  }

  /** Writes a file; with `offset` > 0 appends a chunk to a file of exactly that size (chunked writes). */
  async writeFile(input: {
    sandbox: string;
    path: string;
    content: Buffer;
    session?: string;
    stepId?: string;
    offset?: number;
  }): Promise<{ path: string; bytes: number; cwd: string; session: string }> {
    if (input.content.length > 16 * 1024 * 1024) throw new SandboxDeskError('invalid_input', 'content is larger than 16 MiB');
    const t = await this.fileTarget(input.sandbox, input.path, input.session, input.stepId);
    const r = await t.run(writeSandboxFile(t.file, t.target, input.content, input.offset ?? 0));
    return { ...r, cwd: t.cwd, session: t.key };
  }

  async listDir(input: {
    sandbox: string;
    path?: string;
    session?: string;
    stepId?: string;
  }): Promise<{ path: string; entries: DirEntry[]; cwd: string; session: string }> {
    const t = await this.fileTarget(input.sandbox, input.path ?? '.', input.session, input.stepId);
    const r = await t.run(listSandboxDir(t.file, t.target));
    return { ...r, cwd: t.cwd, session: t.key };
  }

  // ---- streamed transfers (the file panel, drops): the same anchoring as the file tools above ----

  /** Checks that a file of `size` bytes named `name` can land in `dir` (default: the session's cwd). */
  async checkUpload(input: { sandbox: string; session?: string; dir?: string; name: string; size: number }) {
    const t = await this.fileTarget(input.sandbox, input.dir ?? '.', input.session, undefined);
    const r = await t.run(checkUpload(t.file, { dir: t.target, name: input.name, size: input.size }));
    return { ...r, cwd: t.cwd, session: t.key };
  }

  /** Starts an upload; the caller streams exactly `size` bytes into `input`. */
  async startUpload(input: { sandbox: string; session?: string; dir?: string; name: string; size: number }): Promise<UploadSink> {
    const t = await this.fileTarget(input.sandbox, input.dir ?? '.', input.session, undefined);
    return t.run(startUpload(t.file, { dir: t.target, name: input.name, size: input.size }));
  }

  async startDownload(input: { sandbox: string; session?: string; path: string }): Promise<DownloadSource> {
    const t = await this.fileTarget(input.sandbox, input.path, input.session, undefined);
    return t.run(startDownload(t.file, t.target));
  }

  async makeDirectory(input: { sandbox: string; session?: string; dir?: string; name: string }) {
    const t = await this.fileTarget(input.sandbox, input.dir ?? '.', input.session, undefined);
    const r = await t.run(makeSandboxDirectory(t.file, t.target, input.name));
    return { ...r, cwd: t.cwd, session: t.key };
  }

  /** Ends every terminal (the app is closing). */
  closeAll(): void {
    this.closed = true;
    this.opts.attach?.closeAll();
    this.terminals.closeAll();
  }
}
