/** The image whose sandboxes have the whole desktop (Xvnc, Xfce, Chromium): what the UI offers when one lacks it. */
export const DESKTOP_IMAGE = 'sandbox-desk/desktop:latest';

/** What the UI and the CLI are told about a desktop (the renderer imports them). */
export interface DesktopStatus {
  sandbox: string;
  running: boolean;
  placement: 'sandbox' | 'host' | 'refused';
  /** e.g. ":20" */
  display: string | null;
  geometry: string | null;
  leaseHolder: 'agent' | 'human';
  leaseViewer: string | null;
  /** Binaries the sandbox lacks for a desktop. */
  missing: string[];
  /** Why the desktop cannot run here, when it cannot. */
  reason: string | null;
  /** false when Chromium runs without its inner sandbox (the container blocks user namespaces). */
  chromiumSandbox: boolean | null;
  /**
   * Who can reach the display (X, RFB) and the browser's DevTools: `isolated` — only Sandbox Desk (the
   * desktop runs as its own user; input from the agent goes through the app, behind the control lease);
   * `shared` — the sandbox's own shell can too, and `displayIsolationReason` says why. For a desktop
   * that is not running: what starting one would give. null when the placement is refused.
   */
  displayIsolation: 'isolated' | 'shared' | null;
  displayIsolationReason: string | null;
  /** The account the desktop runs (or would run) as inside the sandbox. */
  displayUser: string | null;
  /** true when the desktop was started with grantShellDisplay (`--grant-shell-display`). */
  shellDisplayGranted: boolean;
  /**
   * Set while the desktop is not running because it died inside the sandbox (Xvnc killed, the launcher
   * gone) rather than being stopped, as the core watching it saw (desktop-watch.ts); cleared by a start.
   */
  ended?: { how: 'crashed'; at: string; detail: string };
  /** The screen recording (issue 16): on by default while the desktop runs (config `replay.record`, `--no-record`). */
  recording: DesktopRecordingStatus;
  /** A VM's CPU: `tcg` is QEMU's software emulation (no KVM), where everything, the browser most, is slow. */
  accel?: 'kvm' | 'tcg' | null;
  /** What the accel means for the browser, measured (bench/vm.ts), when it matters; null otherwise. */
  browserNote?: string | null;
}

/** Whether the screen is being recorded, how much is on disk, since when, and why it stopped on its own. */
export interface DesktopRecordingStatus {
  on: boolean;
  /** Bytes of the screen recording on disk (all its segments). */
  bytes: number;
  /** ISO time the recording (re)started; null when off. */
  since: string | null;
  /** e.g. "screen recording stopped: disk full (ENOSPC); the desktop keeps running". */
  warning: string | null;
}

/**
 * The last action an agent took on a desktop, for viewers to show for a few seconds: where it aimed
 * and, when it named a frame this core still had, that frame's image.
 */
export interface AgentActionView {
  sandbox: string;
  /** ISO time the action finished. */
  at: string;
  kind: string;
  /** The screen point it aimed at (null for typing and keys). */
  target: { x: number; y: number } | null;
  /** The pointer measured after it. */
  pointer: { x: number; y: number };
  screen: { width: number; height: number };
  /** The frame the action used, as a data: URL, when it named one. */
  /** `takenAt`: when the frame was taken (replay shows the recorded screen at that time). */
  frame: { frameId: string; width: number; height: number; image: string; takenAt?: string } | null;
  /** The agent's session that acted (MCP: the call's `session`, "default" when it named none); null: not said (CLI). */
  session?: string | null;
}

/**
 * An agent action refused because a person held control (human_has_control): shown on the person's
 * screen ("Agent (session X) tried to click at 100,200 — refused: you have control") and kept in the replay.
 */
export interface AgentRefusalView {
  sandbox: string;
  /** ISO time it was refused. */
  at: string;
  /** What the agent tried: click, type, key, resize, clipboard, browser… */
  kind: string;
  /** Where it aimed, in screen pixels (null for typing, keys and the like). */
  target: { x: number; y: number } | null;
  session: string | null;
  /** The viewer that held control (the person's window knows it is its own). */
  viewerId: string | null;
  /** The refusal's message. */
  message: string;
}
