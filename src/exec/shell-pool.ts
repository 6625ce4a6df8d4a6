import type { SandboxEnvironment } from '../sandbox/provider.js';
import { toDisposable, type DisposableStore, type IDisposable } from '../shared/lifecycle.js';
import type { RawRun, RunRequest } from './command-capture.js';
import { SessionShell, type LateOutput } from './session-shell.js';

/** A terminal attached to its session: while attached, its shell runs the session's commands (session-attach.ts). */
export interface AttachedRunner {
  readonly alive: boolean;
  readonly incarnation: string;
  run(req: RunRequest & { workdir?: boolean }): Promise<RawRun & { waitedMs: number }>;
  /** Its late output (a terminal shows it too): logged like a session shell's while it is the session's shell. */
  onLateOutput?(listener: (late: LateOutput) => void): () => void;
}

export interface ShellPoolOptions {
  /** Close a shell nobody used for this long. */
  idleMs: number;
  /**
   * The store of the incarnation an environment belongs to: each shell registers there, so it ends
   * when its incarnation does (restart, stop, removal) instead of waiting for the next command.
   */
  scopeOf?: (env: SandboxEnvironment) => DisposableStore | null;
  /** Output a session's background jobs printed after their command ended (see SessionShell.onLateOutput). */
  onLateOutput?: (where: { sandbox: string; session: string }, late: LateOutput) => void;
}

interface Entry {
  sandbox: string;
  session: string;
  shell: SessionShell;
  scope: DisposableStore | null;
  registration: IDisposable | null;
}

export interface DroppedShell {
  sandbox: string;
  session: string;
  /** The last cwd the dropped shell observed: a snapshot a rescue may use to fill an empty record. */
  lastCwd: string | null;
}

/**
 * One persistent shell per (sandbox, session, user): session state never leaks between sessions.
 * Shells of an earlier incarnation of a sandbox (restarted or replaced) are dropped, never reused.
 */
export class ShellPool {
  private readonly shells = new Map<string, Entry>();
  /**
   * Shells whose incarnation ended while they were idle: the next command of that session learns the
   * sandbox was recreated, and the last cwd the shell knew (as if it had found the shell itself).
   */
  private readonly retired = new Map<string, DroppedShell & { incarnation: string }>();
  private readonly opening = new Map<string, Promise<SessionShell>>();
  private readonly attached = new Map<string, AttachedRunner>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly opts: ShellPoolOptions) {
    this.sweeper = setInterval(() => this.closeIdle(), Math.max(1000, Math.min(opts.idleMs, 60_000)));
    this.sweeper.unref();
  }

  private static key(sandbox: string, session: string, user: string | undefined): string {
    return JSON.stringify([sandbox, session, user ?? null]);
  }

  /** The session's live shell, opening one when needed. Throws when no stream can be opened. */
  async acquire(
    sandbox: string,
    session: string,
    user: string | undefined,
    env: SandboxEnvironment,
  ): Promise<{ shell: SessionShell; dropped: DroppedShell | null }> {
    const key = ShellPool.key(sandbox, session, user);
    let dropped: DroppedShell | null = null;
    const retired = this.retired.get(key);
    this.retired.delete(key);
    if (retired && retired.incarnation !== env.incarnation) dropped = { sandbox, session, lastCwd: retired.lastCwd };
    // The session's shell was a person's terminal attached to it, in an incarnation that ended (a
    // restart, a reboot): that shell is gone with it, and the session's next command says so.
    const attached = this.attached.get(key);
    if (attached && attached.incarnation !== env.incarnation) {
      this.attached.delete(key);
      dropped = { sandbox, session, lastCwd: null };
    }
    const entry = this.shells.get(key);
    if (entry) {
      if (entry.shell.alive && entry.shell.incarnation === env.incarnation) return { shell: entry.shell, dropped };
      this.close(key, entry);
      if (entry.shell.incarnation !== env.incarnation) dropped = { sandbox, session, lastCwd: entry.shell.lastCwd };
    }
    let pending = this.opening.get(key);
    if (!pending) {
      pending = SessionShell.open(env, user);
      this.opening.set(key, pending);
    }
    try {
      const shell = await pending;
      const scope = this.opts.scopeOf?.(env) ?? null;
      const added: Entry = { sandbox, session, shell, scope, registration: null };
      // Concurrent acquires share one opening: only the one that adds the entry subscribes.
      if (this.shells.get(key)?.shell !== shell) shell.onLateOutput((late) => this.opts.onLateOutput?.({ sandbox, session }, late));
      this.shells.set(key, added);
      // Added after the map entry: a scope that already ended disposes at once, and must find it.
      if (scope) added.registration = scope.add(toDisposable(() => this.retire(key, added)));
      return { shell: added.shell, dropped };
    } finally {
      this.opening.delete(key);
    }
  }

  /**
   * Takes a shell opened ahead (a warm pool's, while its sandbox waited under another name) as the
   * session's shell, so the session's first command pays no shell start. Only a live shell of this
   * incarnation, started exactly as this environment would start it (same `docker exec` prefix: user,
   * proxy variables), where the session has none yet; false (the caller closes it) otherwise. The
   * shell carries no cwd of its own: every command names the directory it starts in.
   */
  adopt(
    sandbox: string,
    session: string,
    user: string | undefined,
    env: SandboxEnvironment,
    shell: SessionShell,
    openedWith: string[],
  ): boolean {
    const key = ShellPool.key(sandbox, session, user);
    if (!shell.alive || shell.incarnation !== env.incarnation || this.shells.has(key) || this.opening.has(key)) return false;
    if (JSON.stringify(env.execPrefix({ user, interactive: false })) !== JSON.stringify(openedWith)) return false;
    const scope = this.opts.scopeOf?.(env) ?? null;
    const added: Entry = { sandbox, session, shell, scope, registration: null };
    shell.onLateOutput((late) => this.opts.onLateOutput?.({ sandbox, session }, late));
    shell.lastUsedAt = Date.now();
    this.shells.set(key, added);
    if (scope) added.registration = scope.add(toDisposable(() => this.retire(key, added)));
    return true;
  }

  /** true when the session has a shell that is up: a command can go straight to it. */
  hasLive(sandbox: string, session: string, user: string | undefined): boolean {
    const key = ShellPool.key(sandbox, session, user);
    return (this.attached.get(key)?.alive || this.shells.get(key)?.shell.alive) ?? false;
  }

  /** From now on the session's commands go to this terminal's shell, until the returned registration is disposed. */
  attach(sandbox: string, session: string, user: string | undefined, runner: AttachedRunner): IDisposable {
    const key = ShellPool.key(sandbox, session, user);
    this.attached.set(key, runner);
    const unlisten = runner.onLateOutput?.((late) => this.opts.onLateOutput?.({ sandbox, session }, late));
    return toDisposable(() => {
      unlisten?.();
      if (this.attached.get(key) !== runner) return;
      this.attached.delete(key);
      // Remembered like a retired shell: when the terminal ended with its incarnation (a restart, a
      // reboot), the session's next command — in the new one — says environment_recreated; after a
      // tab closed in the same incarnation it says nothing.
      this.retired.set(key, { sandbox, session, lastCwd: null, incarnation: runner.incarnation });
    });
  }

  /** The terminal attached to the session, when one is, up, in this incarnation. */
  attachedTo(sandbox: string, session: string, user: string | undefined, incarnation: string): AttachedRunner | null {
    const r = this.attached.get(ShellPool.key(sandbox, session, user));
    return r?.alive && r.incarnation === incarnation ? r : null;
  }

  /** The sessions of a sandbox whose shell is up (a restore opens them again in the restored sandbox). */
  liveSessions(sandbox: string): string[] {
    return [...new Set([...this.shells.values()].filter((e) => e.sandbox === sandbox && e.shell.alive).map((e) => e.session))];
  }

  private close(key: string, e: Entry): void {
    if (this.shells.get(key) === e) this.shells.delete(key);
    if (e.registration) e.scope?.delete(e.registration);
    e.shell.close();
  }

  /**
   * The shell's incarnation ended (or the shell died): close it, and remember it for the session's next
   * command, which is told only if it runs in another incarnation.
   */
  private retire(key: string, e: Entry): void {
    if (this.shells.get(key) !== e) return;
    this.close(key, e);
    this.retired.set(key, { sandbox: e.sandbox, session: e.session, lastCwd: e.shell.lastCwd, incarnation: e.shell.incarnation });
  }

  /** Closes every shell of a sandbox (stopped, removed) or of one session; nothing of them is remembered. */
  closeFor(sandbox: string, session?: string): void {
    const mine = (e: { sandbox: string; session: string }): boolean =>
      e.sandbox === sandbox && (session === undefined || e.session === session);
    for (const [key, e] of this.shells) if (mine(e)) this.close(key, e);
    for (const [key, r] of this.retired) if (mine(r)) this.retired.delete(key);
  }

  closeIdle(now = Date.now()): void {
    for (const [key, e] of this.shells) {
      // A shell found dead may have died with its sandbox (restart, reboot): remembered like a retired one,
      // so the session's next command still learns of a new incarnation however late it comes.
      if (!e.shell.alive) this.retire(key, e);
      else if (!e.shell.busy && now - e.shell.lastUsedAt >= this.opts.idleMs) this.close(key, e);
    }
  }

  get size(): number {
    return this.shells.size;
  }

  closeAll(): void {
    clearInterval(this.sweeper);
    for (const [key, e] of this.shells) this.close(key, e);
    this.retired.clear();
  }
}
