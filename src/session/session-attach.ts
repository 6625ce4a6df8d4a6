import { AttachedShell, type AttachableTerminal } from '../exec/attached-shell.js';
import type { ShellPool } from '../exec/shell-pool.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import type { IDisposable } from '../shared/lifecycle.js';

/**
 * Prints the shell's exported environment as `export NAME=<%q>` lines, one per variable, which the
 * other shell evals: what the session carries from one shell to the next when a terminal attaches or
 * detaches. Left out: what belongs to a shell rather than to the session (its cwd, depth, terminal,
 * prompt and the terminal's own hooks).
 */
export const EXPORTED_ENV_SCRIPT = `for __sd_v in $(compgen -e); do case $__sd_v in PWD|OLDPWD|SHLVL|_|TERM|COLUMNS|LINES|PS0|PS1|PROMPT_COMMAND|SDESK_*|BASH_FUNC_*) continue;; esac; builtin printf 'export %s=%q\\n' "$__sd_v" "\${!__sd_v}"; done; builtin unset __sd_v`;

/** How long a closing terminal's shell is given to hand its environment back (its prompt may be busy). */
const HANDBACK_TIMEOUT_MS = 3000;

interface Attachment {
  shell: AttachedShell;
  registration: IDisposable;
  where: Where;
}

interface Where {
  sandbox: string;
  session: string;
  user: string | undefined;
  env: SandboxEnvironment;
  /** The session's cwd record now (an env handover also enters it). */
  cwd: () => string;
}

/** What the attach needs of a terminal beyond running commands: its channel report. */
export interface AttachingTerminal extends AttachableTerminal {
  readonly id: string;
}

/**
 * A terminal opened on a session is that session's shell (issue 34 item 3): while it is open the
 * session's commands run in it (ShellPool routes them), the person sees them, and one shell has one
 * cwd — measured by the command's end frame for the agent's commands and by the prompt for the
 * person's. The session's own shell hands its exported environment to the terminal when it attaches
 * and takes the terminal's back when it closes.
 */
export class SessionAttach {
  private readonly attached = new Map<string, Attachment>();

  constructor(
    private readonly shells: ShellPool,
    private readonly log: (message: string) => void = () => undefined,
  ) {}

  /** The terminal's shell, once its channel is up, becomes the session's shell. */
  attach(terminal: AttachingTerminal, where: Where): void {
    let seen = false;
    const sub = terminal.onMark((m) => {
      // Only the first report (printed before the login shell ran anything) names the channel.
      if (m.kind !== 'dir' || seen) return;
      seen = true;
      sub.dispose();
      void this.join(terminal, where, m.dir).catch((err: unknown) =>
        this.log(`terminal ${terminal.id} stays unattached: ${err instanceof Error ? err.message : String(err)}`),
      );
    });
    terminal.onExit(() => {
      sub.dispose();
      this.forget(terminal.id);
    });
  }

  /** The terminal attached to a session now (its id), if any. */
  terminalOf(sandbox: string, session: string): string | null {
    for (const [id, a] of this.attached) if (a.where.sandbox === sandbox && a.where.session === session && a.shell.alive) return id;
    return null;
  }

  isAttached(terminalId: string): boolean {
    return this.attached.get(terminalId)?.shell.alive ?? false;
  }

  private async join(terminal: AttachingTerminal, where: Where, dir: string): Promise<void> {
    const shell = await AttachedShell.open(where.env, where.user, terminal, dir);
    if (terminal.exited) return shell.close();
    // The session's own shell, if it has one, hands over its exported environment, then ends: one shell per session.
    const env = await this.takeFromSessionShell(where);
    if (env) await shell.run(this.internal(env, where));
    const registration = this.shells.attach(where.sandbox, where.session, where.user, shell);
    this.attached.set(terminal.id, { shell, registration, where });
    if (terminal.exited) this.forget(terminal.id);
  }

  private async takeFromSessionShell(where: Where): Promise<string | null> {
    if (!this.shells.hasLive(where.sandbox, where.session, where.user)) return null;
    const { shell } = await this.shells.acquire(where.sandbox, where.session, where.user, where.env);
    const raw = await shell.run(this.internal(EXPORTED_ENV_SCRIPT, where, shell.lastCwd));
    this.shells.closeFor(where.sandbox, where.session);
    return raw.end?.exitCode === 0 ? raw.stdout.toString('utf8') : null;
  }

  /**
   * Detaches before the terminal closes: the terminal's exported environment goes to a new session
   * shell, which continues where the terminal stood (the record). Best effort within a few seconds —
   * a person's command holding the prompt, or a shell that is gone, leaves the environment behind.
   */
  async release(terminalId: string): Promise<void> {
    const a = this.attached.get(terminalId);
    if (!a) return;
    try {
      if (!a.shell.alive) return;
      const raw = await a.shell.run({ ...this.internal(EXPORTED_ENV_SCRIPT, a.where), timeoutMs: HANDBACK_TIMEOUT_MS });
      if (raw.end?.exitCode !== 0) return this.log(`terminal ${terminalId}: its environment was not handed back (its prompt stayed busy)`);
      const { shell } = await this.shells.acquire(a.where.sandbox, a.where.session, a.where.user, a.where.env);
      // Queued before the session's next command, which goes to this shell once the terminal is forgotten.
      const imported = shell.run(this.internal(raw.stdout.toString('utf8'), a.where));
      this.forget(terminalId);
      await imported;
    } catch (err) {
      this.log(`terminal ${terminalId}: its environment was not handed back: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      this.forget(terminalId);
      a.shell.close();
    }
  }

  private forget(terminalId: string): void {
    const a = this.attached.get(terminalId);
    if (!a) return;
    this.attached.delete(terminalId);
    a.registration.dispose();
    if (!a.shell.alive) a.shell.close();
  }

  /** The app's own command in a session's shell: entered where the session stands, not shown, not recorded. */
  private internal(command: string, where: Where, cwd?: string | null) {
    return {
      target: cwd ?? where.cwd(),
      tmpDir: where.env.getTempDir(),
      command: command.trim() === '' ? 'true' : command,
      timeoutMs: 15_000,
      maxOutputBytes: 4 << 20,
      quiet: true,
    };
  }

  closeAll(): void {
    for (const id of [...this.attached.keys()]) {
      const a = this.attached.get(id)!;
      this.forget(id);
      a.shell.close();
    }
  }
}
