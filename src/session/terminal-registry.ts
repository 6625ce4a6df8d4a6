import { SandboxDeskError } from '../shared/errors.js';
import type { Event, IDisposable } from '../shared/lifecycle.js';
import type { TerminalInfo } from '../shared/terminal-types.js';

/** What the registry needs of a terminal (TerminalSession has it; unit tests fake it). */
export interface RegisteredTerminal extends IDisposable {
  readonly id: string;
  readonly createdAt: string;
  readonly viewers: number;
  readonly cols: number;
  readonly rows: number;
  readonly scrollbackBytes: number;
  readonly onExit: Event<unknown>;
  readonly exited: boolean;
}

/**
 * The core's open terminals, by id and by sandbox: a terminal is here from its open until its shell
 * ends (closed from its tab, exited, or its sandbox's incarnation ended). Any window can list a
 * sandbox's terminals and reattach — the window is a view of them, not their owner.
 */
export class TerminalRegistry<T extends RegisteredTerminal = RegisteredTerminal> {
  private readonly entries = new Map<string, { terminal: T; sandbox: string; session: string; startedIn: string }>();

  add(terminal: T, where: { sandbox: string; session: string; startedIn: string }): void {
    if (terminal.exited) return;
    this.entries.set(terminal.id, { terminal, ...where });
    terminal.onExit(() => this.entries.delete(terminal.id));
  }

  get(id: string): T {
    const e = this.entries.get(id);
    if (!e) throw new SandboxDeskError('not_found', `no terminal ${id}`, { hint: 'it was closed or its shell exited; open a new one' });
    return e.terminal;
  }

  /** A sandbox's open terminals, oldest first. */
  list(sandbox: string): TerminalInfo[] {
    return [...this.entries.keys()]
      .map((id) => this.info(id))
      .filter((t) => t.sandbox === sandbox)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  info(id: string): TerminalInfo {
    const t = this.get(id);
    const { sandbox, session, startedIn } = this.entries.get(id)!;
    return {
      terminalId: t.id,
      sandbox,
      session,
      startedIn,
      createdAt: t.createdAt,
      viewers: t.viewers,
      cols: t.cols,
      rows: t.rows,
      scrollbackBytes: t.scrollbackBytes,
    };
  }

  /** Ends a terminal's shell (closing its tab). Returns once asked; the registry forgets it when the shell is gone. */
  close(id: string): void {
    this.get(id).dispose();
  }

  /** Ends every terminal (the app is closing). */
  closeAll(): void {
    for (const e of this.entries.values()) e.terminal.dispose();
    this.entries.clear();
  }
}
