/** An open terminal as the core keeps it (it lives until its tab closes it). Types only (the UI imports them). */
export interface TerminalInfo {
  terminalId: string;
  sandbox: string;
  /** The session the terminal's shell belongs to (its cwd record follows the shell's `cd`s). */
  session: string;
  /** Where its shell started (the session's cwd then). */
  startedIn: string;
  createdAt: string;
  /** Windows attached to it now (0: it runs on, waiting for one to reattach). */
  viewers: number;
  cols: number;
  rows: number;
  /** Output kept for the next viewer to replay, in bytes (bounded by config `terminal.scrollbackBytes`). */
  scrollbackBytes: number;
  /**
   * Set while the sandbox is being restored: the shell ended with the old sandbox and comes back under
   * this same id once the restore is done (a window waits for that, then reattaches). Absent otherwise.
   */
  restarting?: true;
  /**
   * The terminal's shell is its session's shell: the agent's commands in this session run in it and
   * show in it (false until its channel is up, or when it could not be joined).
   */
  attached?: boolean;
}
