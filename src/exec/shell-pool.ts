import type { SandboxEnvironment } from '../sandbox/provider.js';
import { SessionShell } from './session-shell.js';

export interface ShellPoolOptions {
  /** Close a shell nobody used for this long. */
  idleMs: number;
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
  private readonly shells = new Map<string, { sandbox: string; session: string; shell: SessionShell }>();
  private readonly opening = new Map<string, Promise<SessionShell>>();
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
    const entry = this.shells.get(key);
    if (entry) {
      if (entry.shell.alive && entry.shell.incarnation === env.incarnation) return { shell: entry.shell, dropped };
      entry.shell.close();
      this.shells.delete(key);
      if (entry.shell.incarnation !== env.incarnation) dropped = { sandbox, session, lastCwd: entry.shell.lastCwd };
    }
    let pending = this.opening.get(key);
    if (!pending) {
      pending = SessionShell.open(env, user);
      this.opening.set(key, pending);
    }
    try {
      const shell = await pending;
      this.shells.set(key, { sandbox, session, shell });
      return { shell, dropped };
    } finally {
      this.opening.delete(key);
    }
  }

  /** true when the session has a shell that is up: a command can go straight to it. */
  hasLive(sandbox: string, session: string, user: string | undefined): boolean {
    return this.shells.get(ShellPool.key(sandbox, session, user))?.shell.alive ?? false;
  }

  /** Closes every shell of a sandbox (stopped, removed) or of one session. */
  closeFor(sandbox: string, session?: string): void {
    for (const [key, e] of this.shells) {
      if (e.sandbox === sandbox && (session === undefined || e.session === session)) {
        e.shell.close();
        this.shells.delete(key);
      }
    }
  }

  closeIdle(now = Date.now()): void {
    for (const [key, e] of this.shells) {
      if (!e.shell.alive || (!e.shell.busy && now - e.shell.lastUsedAt >= this.opts.idleMs)) {
        e.shell.close();
        this.shells.delete(key);
      }
    }
  }

  get size(): number {
    return this.shells.size;
  }

  closeAll(): void {
    clearInterval(this.sweeper);
    for (const e of this.shells.values()) e.shell.close();
    this.shells.clear();
  }
}
