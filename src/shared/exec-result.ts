/**
 * What one command run in a sandbox reports. Types only: the renderer imports this through
 * src/api/contract.ts, so nothing here may need Node.
 */

export type WarningCode =
  /** The directory asked for does not exist; the command ran in its nearest enterable ancestor. */
  | 'cwd_missing'
  /** The directory exists but the sandbox user cannot enter it. */
  | 'cwd_denied'
  /** The path names something that is not a directory. */
  | 'cwd_not_directory'
  /** Neither the path, its ancestors nor the temp dir could be entered. */
  | 'cwd_unenterable'
  /** A recorded host path was dropped on a container backend. */
  | 'host_path_dropped'
  /** A host path was translated through a declared mount. */
  | 'host_path_translated'
  /** A declared default cwd was relative or host-shaped and was ignored. */
  | 'default_cwd_ignored'
  /** A relative workdir was resolved against the session's cwd. */
  | 'workdir_relative'
  /** The command deleted the directory it ended in; the record keeps the last enterable one. */
  | 'cwd_deleted'
  /**
   * The wrapper's frames came out malformed, cut or repeated (nothing a command prints can cause this
   * unless it learnt the nonce): the bytes were kept as output and the cwd was not observed.
   */
  | 'framing_broken'
  /**
   * The command ended in a directory whose name is not valid UTF-8: a JSON string cannot carry it
   * unchanged, so the cwd was not observed and the record is unchanged.
   */
  | 'cwd_not_utf8'
  /** The command was killed (timeout, interrupt, dropped stream): its cwd was not observed. */
  | 'cwd_unobserved'
  /** The backend warned while starting the sandbox (e.g. KVM did not work and the VM runs under TCG). */
  | 'backend_warning'
  /** Output went past the limit and was cut. */
  | 'output_truncated'
  /** A checkpoint of a stopped sandbox holds its disk only (no running processes). */
  | 'checkpoint_disk_only'
  /** The session shell could not be opened; the command ran one-shot. */
  | 'shell_fallback'
  /** The sandbox was restarted or replaced since this session's last command. */
  | 'environment_recreated'
  /** Something that ran before a restore or fork (the desktop, a terminal, a session shell) did not come back. */
  | 'not_restarted'
  /** The call's timeout passed while it waited for earlier commands of its session: it did not run. */
  | 'queue_timeout'
  /** The call was interrupted while it waited for earlier commands of its session: it did not run. */
  | 'queue_interrupted'
  /** The session's shell is a person's terminal, and the command waited for the person's foreground command to end. */
  | 'terminal_busy';

export interface ExecWarning {
  code: WarningCode;
  message: string;
  /** The path that was asked for, when the warning is about a path. */
  asked?: string;
  /** The path that was used instead. */
  used?: string;
}

/** Where the cwd a command started in came from. */
export type CwdSource = 'workdir' | 'session' | 'created' | 'default';

export type ExecMode = 'shell' | 'oneshot';

/**
 * How `stdout`/`stderr` carry a stream's bytes: `utf8` — they were valid UTF-8 and are that text;
 * `base64` — they were not (binary output), and the field is base64 of the exact bytes.
 */
export type StreamEncoding = 'utf8' | 'base64';

/** What was kept of a stream that was cut (at the output limit, or to fit the transport's answer). */
export interface OutputCut {
  /** Bytes of the stream given in the result. */
  keptBytes: number;
  /** Bytes the command printed on it in all. */
  totalBytes: number;
}

export interface ExecResult {
  exitCode: number;
  /**
   * The command's stdout: its text when the bytes are valid UTF-8, else base64 of the exact bytes
   * (`encoding.stdout` says which; never U+FFFD in place of a byte). In-process, `stdoutBytes` has the bytes.
   */
  stdout: string;
  /** The same for stderr (`encoding.stderr`). */
  stderr: string;
  /** Per stream: how `stdout` and `stderr` carry the bytes. */
  encoding: { stdout: StreamEncoding; stderr: StreamEncoding };
  /** The physical cwd the command ended in, measured inside the sandbox; null when not observed. */
  cwd: string | null;
  /** true only when the wrapper's marker was read for a command that finished by itself. */
  cwdObserved: boolean;
  /** The directory the command started in (after enterability checks); '' when it never started (queue_timeout). */
  startCwd: string;
  cwdSource: CwdSource;
  warnings: ExecWarning[];
  /** stderr lines reporting `Permission denied` / `Operation not permitted`, counted even when exit code is 0. */
  deniedCount: number;
  mode: ExecMode;
  timedOut: boolean;
  interrupted: boolean;
  truncated: { stdout: boolean; stderr: boolean };
  /** Present when stdout was cut: what was kept of how much (the `output_truncated` warning says why). */
  stdoutTruncated?: OutputCut | undefined;
  /** The same for stderr. */
  stderrTruncated?: OutputCut | undefined;
  durationMs: number;
  /**
   * Milliseconds the call waited for earlier commands of its session (they run one at a time, in
   * arrival order). It counts against the call's timeout.
   */
  queuedMs: number;
  session: string;
  /** The pid (inside the sandbox) of the shell that ran the command: its children descend from it (issue 17: a connection's process is linked to its command by it). */
  shellPid?: number;
}
