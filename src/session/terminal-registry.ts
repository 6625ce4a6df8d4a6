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

/** A terminal kept by id while its sandbox is replaced (a restore): what reopening it in place needs. */
export interface HeldTerminal {
  terminalId: string;
  sandbox: string;
  session: string;
  startedIn: string;
  createdAt: string;
  cols: number;
  rows: number;
  /** The output its viewers had seen (the reopened terminal replays it above its new prompt). */
  scrollback: Buffer;
}

/**
 * The core's open terminals, by id and by sandbox: a terminal is here from its open until its shell
 * ends (closed from its tab, exited, or its sandbox's incarnation ended). Any window can list a
 * sandbox's terminals and reattach — the window is a view of them, not their owner.
 */
export class TerminalRegistry<T extends RegisteredTerminal = RegisteredTerminal> {
  private readonly entries = new Map<string, { terminal: T; sandbox: string; session: string; startedIn: string }>();
  /** Terminals whose sandbox is being restored: their ids are kept until `add` reopens them or `release` gives up. */
  private readonly held = new Map<string, HeldTerminal>();

  add(terminal: T, where: { sandbox: string; session: string; startedIn: string }): void {
    if (terminal.exited) return;
    this.held.delete(terminal.id);
    this.entries.set(terminal.id, { terminal, ...where });
    // Only this terminal's own entry: a terminal reopened under its id may be added before the old shell is gone.
    terminal.onExit(() => {
      if (this.entries.get(terminal.id)?.terminal === terminal) this.entries.delete(terminal.id);
    });
  }

  get(id: string): T {
    const e = this.held.has(id) ? undefined : this.entries.get(id);
    if (!e) {
      if (this.held.has(id))
        throw new SandboxDeskError('refused', `terminal ${id} is restarting: its sandbox is being restored`, {
          hint: 'wait for the restore to finish; the terminal comes back under the same id (see listTerminals)',
        });
      throw new SandboxDeskError('not_found', `no terminal ${id}`, { hint: 'it was closed or its shell exited; open a new one' });
    }
    return e.terminal;
  }

  /**
   * Keeps a sandbox's terminals by id while the sandbox is replaced: their shells end with the old
   * sandbox (`isHeld` tells their viewers to come back rather than that the shell exited), and they
   * are listed as `restarting` until reopened under the same id (`add`) or given up (`release`).
   */
  hold(sandbox: string, scrollbackOf: (terminal: T) => Buffer): HeldTerminal[] {
    const out: HeldTerminal[] = [];
    for (const [id, e] of this.entries) {
      if (e.sandbox !== sandbox || e.terminal.exited || this.held.has(id)) continue;
      const t = e.terminal;
      const h: HeldTerminal = {
        terminalId: id,
        sandbox,
        session: e.session,
        startedIn: e.startedIn,
        createdAt: t.createdAt,
        cols: t.cols,
        rows: t.rows,
        scrollback: scrollbackOf(t),
      };
      this.held.set(id, h);
      out.push(h);
    }
    return out.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  /** true while the terminal's sandbox is being restored (its shell's end is a restart, not an exit). */
  isHeld(id: string): boolean {
    return this.held.has(id);
  }

  /** Gives up a held terminal that could not be reopened: it is gone, as if its shell had exited. */
  release(id: string): void {
    this.held.delete(id);
    const e = this.entries.get(id);
    if (e && e.terminal.exited) this.entries.delete(id);
  }

  /** A sandbox's open terminals, oldest first (those of a sandbox being restored marked `restarting`). */
  list(sandbox: string): TerminalInfo[] {
    const live = [...this.entries.keys()].filter((id) => !this.held.has(id)).map((id) => this.info(id));
    const held = [...this.held.values()].map((h): TerminalInfo => ({
      terminalId: h.terminalId,
      sandbox: h.sandbox,
      session: h.session,
      startedIn: h.startedIn,
      createdAt: h.createdAt,
      viewers: 0,
      cols: h.cols,
      rows: h.rows,
      scrollbackBytes: h.scrollback.length,
      restarting: true,
    }));
    return [...live, ...held].filter((t) => t.sandbox === sandbox).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
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
    // A tab closed while its sandbox is restored: the terminal is not reopened.
    if (this.held.has(id)) {
      this.entries.get(id)?.terminal.dispose();
      return this.release(id);
    }
    this.get(id).dispose();
  }

  /** Ends every terminal (the app is closing). */
  closeAll(): void {
    for (const e of this.entries.values()) e.terminal.dispose();
    this.entries.clear();
    this.held.clear();
  }
}
