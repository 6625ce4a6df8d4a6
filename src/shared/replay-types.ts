/**
 * Replay: what a sandbox's run looked like, on one clock — the screen (a recorded RFB stream with
 * keyframes), every terminal (asciicast v2) and the events around them (agent calls with their cwd,
 * commands, lease changes, checkpoints, desktop actions). Types only: the renderer, the CLI and MCP
 * read them through the API (`replayList`, `replayEvents`, `replayFrame`, `replayCast`,
 * `replayExport`, `replayRemove`).
 */

/** The screen part of a recording: its time span and size (the size of its latest segment). */
export interface ReplayScreenInfo {
  /** ISO times of the first and last recorded update. */
  startedAt: string;
  endedAt: string;
  width: number;
  height: number;
  /** Keyframes written so far (seeking starts from the nearest one before t). */
  keyframes: number;
  bytes: number;
}

/** One terminal's recording: an asciicast v2 file. */
export interface ReplayTerminalInfo {
  /** The terminal id (hex) while it was open. */
  terminalId: string;
  /** The session key the terminal's shell belonged to. */
  session: string | null;
  startedAt: string;
  endedAt: string;
  cols: number;
  rows: number;
  bytes: number;
}

/** What is recorded for one sandbox. */
export interface ReplayRecording {
  sandbox: string;
  /** true while something (screen or a terminal) is being recorded now. */
  recording: boolean;
  /** ISO span over everything recorded (screen, terminals, events). */
  startedAt: string | null;
  endedAt: string | null;
  bytes: number;
  /** The per-sandbox limit; the oldest parts are removed first beyond it. */
  limitBytes: number;
  screen: ReplayScreenInfo | null;
  terminals: ReplayTerminalInfo[];
  /** e.g. "screen recording stopped: disk full" — the desktop kept running. */
  warnings: string[];
}

export type ReplayEventKind =
  | 'agentCall'
  | 'command'
  | 'action'
  | 'lease'
  | 'checkpoint'
  /** The sandbox was put back to a checkpoint (its shells, terminals and desktop restart). */
  | 'restore'
  /** Sandboxes were made from one of its checkpoints (on the source), or this sandbox was (on a fork). */
  | 'fork'
  /** Its network policy changed. */
  | 'network'
  | 'recording';

/** One thing that happened, on the recording's clock. */
export interface ReplayEvent {
  /** ISO time it happened (for calls and commands: when it started). */
  at: string;
  kind: ReplayEventKind;
  /** One line for a list, e.g. "run_command: cd /tmp/proj" or "click (412, 300)". */
  summary: string;
  /** The agent tool when it came from one (run_command, desktop_click …). */
  tool?: string;
  session?: string | null;
  terminalId?: string | null;
  cwdUsed?: string | null;
  cwdObserved?: string | null;
  exitCode?: number | null;
  /** A command whose process ended before it did (the service was killed): no exit code, its cwd not observed. */
  interrupted?: boolean;
  durationMs?: number | null;
  warnings?: string[];
  error?: string | null;
  /** For desktop actions: the point aimed at, in screen coordinates. */
  point?: { x: number; y: number } | null;
  /** For desktop actions that named a frame: the frame's id and when it was taken (fetch it with replayFrame at that time). */
  frameId?: string | null;
  frameAt?: string | null;
}

/** A frame of the recorded screen at a time (the last update at or before `t`). */
export interface ReplayFrame {
  sandbox: string;
  /** The time asked for, and the time of the update the image shows. */
  askedAt: string;
  at: string;
  width: number;
  height: number;
  /** frame width / screen width. */
  scale: number;
  format: 'png' | 'jpeg' | 'webp';
  /** The image, base64. */
  data: string;
}

/** A stretch of an exported range with no picture (the desktop was stopped, restarted or restored). */
export interface ReplayScreenGap {
  from: string;
  to: string;
  /** e.g. "desktop not running", "sandbox restored", "not recorded". */
  what: string;
}

/** What `replayExport` wrote. */
export interface ReplayExportResult {
  dir: string;
  /** The screen as a video, when there was a screen recording in the range. */
  video: {
    file: string;
    format: 'mp4' | 'webm';
    durationMs: number;
    width: number;
    height: number;
    /** Where the screen was not recorded: the video shows a card saying what, from and to (also in events.jsonl). */
    gaps: ReplayScreenGap[];
  } | null;
  /** One asciicast v2 file per terminal recorded in the range. */
  casts: string[];
  /** The events in the range, one JSON object per line. */
  events: string;
  from: string;
  to: string;
}
