// Over 400 lines: the one facade of the desktop (lifecycle, placement, isolation, lease, the live
// screen, the browser); the parts with logic of their own live in screen/, rfb/ and their modules.
import type { DesktopLogLocation } from './desktop-logs.js';
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SandboxDeskError } from '../shared/errors.js';
import { LocalProvider } from '../sandbox/local/local-provider.js';
import type { SandboxEnvironment, SandboxProvider } from '../sandbox/provider.js';
import { Emitter, toDisposable, type DisposableStore, type Event } from '../shared/lifecycle.js';
import type { Lease, LeaseStore, ScreenSize } from '../store/lease-store.js';
import type { AgentActionView, AgentRefusalView, DesktopStatus } from '../shared/desktop-types.js';
import { MIME } from './screen/frame-encode.js';

export type { DesktopStatus } from '../shared/desktop-types.js';
import { runIn } from '../exec/run-in.js';
import { remoteArgv } from '../exec/remote-argv.js';
import { pointerLocation, runXdotool, runXdotoolKeys, type AgentAction } from './agent-actions.js';
import { CdpBridge } from './cdp-bridge.js';
import { readClipboard, writeClipboard } from './desktop-clipboard.js';
import {
  DESKTOP_IMAGE,
  DISPLAY_USER,
  SANDBOX_DISPLAY,
  desktopLayout,
  displayEnv,
  probeDesktop,
  startDesktopProcess,
  stopDesktopProcess,
  type DesktopLayout,
  type DesktopMode,
  type DesktopProbe,
} from './desktop-runtime.js';
import { resolvePlacement, type Placement, type PlacementSetting } from './placement.js';
import { openRelay } from './relay.js';
import { DesktopStreams, type DesktopStream, type StreamOpened } from './desktop-stream.js';
import { RfbClient, transportFromStreams } from './rfb/rfb-client.js';
import {
  LiveScreen,
  UPDATE_INTERVAL_MS,
  type ActionResult,
  type Frame,
  type LiveLink,
  type ScreenAction,
  type ScreenshotOptions,
} from './screen/live-screen.js';
import { PointerProbe, pointerProbeWords } from './screen/pointer-probe.js';
import { DesktopWatch, type DesktopStatusChange } from './desktop-watch.js';
import type { RectArea } from './rfb/framebuffer.js';
import { DesktopRecordings, type RecordingGap } from './replay/desktop-recordings.js';
import { ControlHandover, GEOMETRY_RE, type HandoverLimits } from './control-handover.js';
import { waitForControl, type ControlWait } from './control-wait.js';

export type { ActionResult, Frame, ScreenAction, ScreenshotOptions } from './screen/live-screen.js';
export type { DesktopStatusChange } from './desktop-watch.js';

/** A frame and its encoded image. */
export interface Shot {
  frame: Frame;
  image: Buffer;
}

/** What the desktop service needs from the core: live environments and the lease store. */
export interface DesktopHost {
  /** The connected environment of a running sandbox (throws sandbox_not_running etc.). */
  environment(sandbox: string): Promise<SandboxEnvironment>;
  provider(sandbox: string): SandboxProvider | Promise<SandboxProvider>;
  leases: LeaseStore;
  /** The screen size when `start` is given none (config `desktop.geometry`; default 1280x800). */
  defaultGeometry?: string;
  /** The store of the environment's incarnation: forwards and screen streams end with it. */
  scopeOf?(env: SandboxEnvironment): DisposableStore | null;
  /**
   * Where the last agent action of each desktop is written, so a viewer in another process (the app,
   * while the agent runs `sandbox-desk mcp`) can show it. None: not recorded.
   */
  actionsDir?: string;
  /** `<dataDir>/recordings`: where screen recordings go (issue 16). None: nothing is recorded. */
  recordingsDir?: string;
  /** Config `replay.record`: record running desktops' screens (default true). */
  record?: boolean;
  /** A screen recording stopped on its own or could not start (a full disk); the desktop goes on. */
  onRecordingWarning?(sandbox: string, message: string): void;
  /** A recording resumed after its recorder died (the service was killed): the unrecorded stretch. */
  onRecordingGap?(sandbox: string, gap: RecordingGap): void;
  /** A VM sandbox's accel (kvm/tcg), for `status`; absent or null: not a VM. */
  accel?(sandbox: string): Promise<'kvm' | 'tcg' | null>;
  /** The screen could not be remembered or put back around a person's control (control-handover.ts). */
  onControlWarning?(sandbox: string, message: string): void;
  /** Bounds of taking and giving back control (tests shorten them). */
  handoverLimits?: HandoverLimits;
  /** How often waitForControl looks for another process's give-back (control-wait.ts; tests shorten it). */
  controlPollMs?: number;
  /** At most one refused action told per sandbox in this many ms (default REFUSAL_TELL_EVERY_MS; tests: 0). */
  refusalTellEveryMs?: number;
}

/**
 * A refused action is told (an event, journalled for other processes, and a replay line) at most this
 * often per sandbox: an agent looping on clicks while a person drives must not flood the journal, the
 * replay or the person's screen. The agent still gets every refusal as its answer.
 */
export const REFUSAL_TELL_EVERY_MS = 250;

/** Who tried an action (for the person's screen and the replay when it is refused): the agent's session. */
export interface ActOptions {
  frameId?: string;
  session?: string | null;
}

export interface DesktopStartOptions {
  placement?: PlacementSetting;
  geometry?: string;
  /**
   * Run the desktop as the sandbox user, so the sandbox's own shell (the agent's) can reach the display
   * and the browser; `status` then says `displayIsolation: "shared"`. Off by default.
   */
  grantShellDisplay?: boolean;
  /** false: do not record this desktop's screen (`--no-record`; remembered until a start with true or without it). */
  record?: boolean;
}

/** Where a desktop is (or would be) and which account reaches it. */
interface Located {
  env: SandboxEnvironment;
  layout: DesktopLayout;
  probe: DesktopProbe;
  /** The account the app runs the desktop's processes as; undefined: the sandbox user. */
  user: string | undefined;
  /** null when the display user is there; else why the desktop cannot run as it here. */
  noDisplayUser: string | null;
}

/** How docker/podman (`-u`), sudo and su say an account does not exist. */
const NO_SUCH_USER = /unable to find user|no matching entries in passwd|unknown user|user .* does not exist|no such user|invalid user/i;
/** Inside a sandbox the display number is the sandbox's own; on the host, spread them out. */

/**
 * The bot desktop of each sandbox: start/stop/status, the screen stream for viewers, agent actions
 * behind the control lease, and the browser's DevTools endpoint. Every process it starts goes through
 * the environment's execPrefix, so any backend with streams gets all of it.
 */
export class DesktopService {
  private readonly bridges = new Map<string, Promise<CdpBridge>>();
  /** Which account reaches each sandbox's desktop, learnt by a probe; dropped when an action fails. */
  /**
   * checked: the desktop was found whole just now by its hand-over (a VM template copy's: the moved
   * folder's socket there, X answering the new cookie), so the first stdio stream needs no probe. Once.
   */
  private readonly accounts = new Map<string, { env: SandboxEnvironment; user: string | undefined; checked?: boolean }>();
  private readonly placements = new Map<string, PlacementSetting>();
  /** Screen streams handed over with claimed pooled desktops, until their first viewer takes them (openAhead). */
  private readonly ahead = new Map<string, { env: SandboxEnvironment; stream: DesktopStream; timer: NodeJS.Timeout; closed: boolean }>();
  /**
   * The live agent connection of each sandbox's running desktop. Kept here, per sandbox, until the
   * EnvironmentManager's per-incarnation DisposableStore lands (branch layers): it belongs there.
   */
  private readonly screens = new Map<string, LiveScreen>();
  /** Sandboxes whose desktop is being stopped: actions are refused meanwhile. */
  private readonly stopping = new Set<string>();
  private readonly actionRecorded = new Emitter<{ sandbox: string; action?: AgentActionView }>();
  /** An agent action was recorded (lastAction now returns it): viewers are told instead of polling. `action`: what it was (the replay's events keep it). */
  readonly onActionRecorded: Event<{ sandbox: string; action?: AgentActionView }> = this.actionRecorded.event;
  private readonly actionRefused = new Emitter<AgentRefusalView>();
  /** An agent action was refused because a person holds control: the person's window shows it, the replay keeps it. */
  readonly onActionRefused: Event<AgentRefusalView> = this.actionRefused.event;
  /** When each sandbox's last refusal was told (REFUSAL_TELL_EVERY_MS). */
  private readonly refusalToldAt = new Map<string, number>();
  private readonly statusChanged = new Emitter<DesktopStatusChange>();
  /**
   * A desktop's status changed: a start began and ended (or failed), a stop, a resize, a death inside
   * the sandbox. Start and stop fire it for every caller (dispatch, CLI, MCP); resizes and deaths only
   * while `watchDesktops(true)` (someone listens to pushed state).
   */
  readonly onStatusChanged: Event<DesktopStatusChange> = this.statusChanged.event;
  /** Follows each running desktop this process saw, while watching is on (see desktop-watch.ts). */
  private readonly watch: DesktopWatch;
  private watchingDesktops = false;
  /** Desktops that died inside the sandbox, until the next start: status() says so. */
  private readonly crashes = new Map<string, { how: 'crashed'; at: string; detail: string }>();
  private hostEnv: Promise<SandboxEnvironment> | null = null;
  /** The screen recordings of running desktops (replay/desktop-recordings.ts); null without a recordings dir. */
  private readonly recordings: DesktopRecordings | null;
  private readonly recordingChanged = new Emitter<{ sandbox: string }>();
  /** A screen recording started, stopped (status.recording.warning says why when on its own) or began a segment. */
  readonly onRecordingChanged: Event<{ sandbox: string }> = this.recordingChanged.event;
  /** The screen streams: through the sandbox's inbox where it has one, else the exec's stdio (desktop-stream.ts). */
  private readonly streams = new DesktopStreams();
  /** A screen stream was opened: through the inbox, or through stdio and why (tests, logs). */
  readonly onStreamOpened: Event<StreamOpened> = this.streams.onOpened;
  /** Record desktops found running too (a long-lived core: the app, serve, mcp), not only those started here. */
  private adoptRunning = false;
  /** Taking and giving back control: the agent's screen size remembered and put back (control-handover.ts). */
  private readonly handover: ControlHandover;

  constructor(private readonly host: DesktopHost) {
    this.handover = new ControlHandover(
      {
        leases: host.leases,
        screenSize: (sandbox) => this.screenSizeNow(sandbox),
        resize: (sandbox, size) => this.putScreenSize(sandbox, size),
        warn: (sandbox, message) => host.onControlWarning?.(sandbox, message),
      },
      host.handoverLimits,
    );
    this.watch = new DesktopWatch({
      open: async (sandbox) => {
        const { env, layout, user } = await this.running(sandbox);
        const relay = this.tied(env, await this.streams.open(env, layout.socket, user));
        return Object.assign(
          transportFromStreams(relay.stdout, relay.stdin, () => relay.kill()),
          { dispose: () => void relay.kill() },
        );
      },
      probe: async (sandbox) => {
        const { probe } = await this.locate(sandbox, await this.target(sandbox));
        return { running: probe.running, dirExists: probe.owner !== null, failed: probe.failed };
      },
    });
    this.watch.onEnded(({ sandbox, how, detail }) => {
      if (this.stopping.has(sandbox)) return; // this process is stopping it: stop() says so
      if (how === 'crashed') this.crashes.set(sandbox, { how, at: new Date().toISOString(), detail });
      this.dropConnection(sandbox);
      this.dropAhead(sandbox);
      this.accounts.delete(sandbox);
      this.statusChanged.fire({ sandbox, cause: how, running: false, reason: detail });
    });
    this.watch.onResized(({ sandbox, width, height }) =>
      this.statusChanged.fire({ sandbox, cause: 'resized', running: true, width, height }),
    );
    this.recordings = host.recordingsDir
      ? new DesktopRecordings({
          dir: host.recordingsDir,
          enabled: host.record ?? true,
          live: (sandbox) => this.screen(sandbox).live(),
          onWarning: (sandbox, message) => host.onRecordingWarning?.(sandbox, message),
          onGap: (sandbox, gap) => host.onRecordingGap?.(sandbox, gap),
        })
      : null;
    this.recordings?.onDidChange((e) => this.recordingChanged.fire(e));
  }

  /**
   * Whether to follow running desktops (an idle RFB connection each), so a resize or a death inside
   * the sandbox is told as it happens. On while a client listens to pushed state; a one-shot CLI call
   * leaves it off (it would hold the process open).
   */
  watchDesktops(on: boolean): void {
    this.watchingDesktops = on;
    if (!on) this.watch.unwatchAll();
  }

  private follow(sandbox: string): void {
    if (this.watchingDesktops) this.watch.watch(sandbox);
  }

  /** A long-lived core records every running desktop it sees (status), not only the ones it starts. */
  recordRunningDesktops(): void {
    this.adoptRunning = true;
  }

  /** The screen dir of a sandbox's recording (`<dataDir>/recordings/<sandbox>/screen`), or null when nothing records. */
  screenRecordingDir(sandbox: string): string | null {
    return this.recordings?.screenDir(sandbox) ?? null;
  }

  /** The screen recording's state without probing the desktop (replay's list: on now, and a warning it stopped with). */
  screenRecordingStatus(sandbox: string): DesktopStatus['recording'] | null {
    return this.recordings?.status(sandbox) ?? null;
  }

  /** Removes the sandbox's screen recording (recording goes on afresh if it was on); the bytes removed. */
  removeScreenRecording(sandbox: string): Promise<number> {
    return this.recordings?.remove(sandbox) ?? Promise.resolve(0);
  }

  private recordingStatus(sandbox: string, running: boolean): DesktopStatus['recording'] {
    if (!this.recordings) return { on: false, bytes: 0, since: null, warning: null };
    if (running && this.adoptRunning && !this.stopping.has(sandbox)) this.recordings.ensure(sandbox);
    return this.recordings.status(sandbox);
  }

  private async placementFor(sandbox: string, setting?: PlacementSetting): Promise<Placement> {
    const provider = await this.host.provider(sandbox);
    return resolvePlacement(setting ?? this.placements.get(sandbox) ?? 'auto', {
      name: provider.name,
      supportsStreams: provider.supportsStreams,
    });
  }

  /** The environment the desktop runs in, and where it lives there. Refused placements throw. */
  private async target(
    sandbox: string,
    setting?: PlacementSetting,
  ): Promise<{ env: SandboxEnvironment; layout: DesktopLayout; placement: Placement & { where: 'sandbox' | 'host' } }> {
    const placement = await this.placementFor(sandbox, setting);
    if (placement.where === 'refused')
      throw new SandboxDeskError('placement_refused', `desktop refused for sandbox ${sandbox}: ${placement.reason}`);
    const sandboxEnv = await this.host.environment(sandbox);
    if (placement.where === 'sandbox' || (await this.host.provider(sandbox)).name === 'local') {
      const display = placement.where === 'sandbox' ? SANDBOX_DISPLAY : hostDisplay(sandbox);
      return { env: sandboxEnv, layout: desktopLayout(sandboxEnv, sandbox, display), placement };
    }
    // An explicit host placement for a sandboxed backend: the desktop runs on this machine.
    this.hostEnv ??= new LocalProvider().createEnvironment({
      cwd: '~',
      sandbox: { name: 'host', backendRef: null, image: null, user: null, mounts: [], env: {}, options: {} },
    });
    const env = await this.hostEnv;
    return { env, layout: desktopLayout(env, sandbox, hostDisplay(sandbox)), placement };
  }

  /** Where the desktop's own logs are and who may read them (the Logs tab's `desktop*` sources). */
  async logLocation(sandbox: string): Promise<DesktopLogLocation> {
    const located = await this.locate(sandbox, await this.target(sandbox));
    return { env: located.env, dir: located.layout.dir, user: located.user };
  }

  async status(sandbox: string, opts: { placement?: PlacementSetting } = {}): Promise<DesktopStatus> {
    const lease = this.host.leases.get(sandbox);
    const base = { sandbox, leaseHolder: lease.holder, leaseViewer: lease.viewerId };
    const placement = await this.placementFor(sandbox, opts.placement);
    if (placement.where === 'refused') {
      return {
        ...base,
        running: false,
        placement: 'refused',
        display: null,
        geometry: null,
        missing: [],
        reason: placement.reason,
        chromiumSandbox: null,
        displayIsolation: null,
        displayIsolationReason: null,
        displayUser: null,
        shellDisplayGranted: false,
        recording: this.recordingStatus(sandbox, false),
      };
    }
    const located = await this.locate(sandbox, await this.target(sandbox, opts.placement));
    const { layout, probe } = located;
    const reason = probe.missing.length ? missingReason(probe.missing, placement.where) : probe.failed;
    const crash = probe.running ? undefined : this.crashes.get(sandbox);
    if (probe.running) this.follow(sandbox);
    const accel = placement.where === 'sandbox' && this.host.accel ? await this.host.accel(sandbox).catch(() => null) : null;
    return {
      ...(crash ? { ended: crash } : {}),
      accel,
      browserNote: accel === 'tcg' && !probe.missing.includes('chromium') ? TCG_BROWSER_NOTE : null,
      ...(await this.isolation(located)),
      ...base,
      running: probe.running,
      placement: placement.where,
      display: probe.running ? `:${layout.display}` : null,
      geometry: probe.geometry,
      missing: probe.missing,
      reason,
      chromiumSandbox: probe.chromiumSandbox,
      recording: this.recordingStatus(sandbox, probe.running),
    };
  }

  /**
   * Finds the desktop and the account that reaches it: the display user where the sandbox has one
   * (one probe, as that user), else the sandbox user. A desktop whose directory another account owns
   * (one started with grantShellDisplay, as the sandbox user) is probed again as that account.
   */
  private async locate(sandbox: string, t: { env: SandboxEnvironment; layout: DesktopLayout }): Promise<Located> {
    let noDisplayUser: string | null = null;
    let probe: DesktopProbe | null = null;
    const timeoutMs = (await this.underTcg(sandbox)) ? TCG_EXEC_MS : undefined;
    try {
      probe = await probeDesktop(t.env, t.layout, DISPLAY_USER, timeoutMs);
      if (probe.whoami !== DISPLAY_USER)
        noDisplayUser = `this backend runs every process as ${probe.whoami ?? 'one user'} (it cannot switch users)`;
    } catch (err) {
      const why = (err as Error).message.replace(/^could not probe the desktop[^:]*: /, '').split('\n')[0]!;
      // Only a missing account, or a backend that refuses to give a prefix for it (an isolated plugin),
      // means "run as the sandbox user"; any other failure (a transient exec error) must not quietly
      // start a shared desktop where an isolated one belongs: fail closed.
      if (err instanceof SandboxDeskError && err.code === 'refused')
        noDisplayUser = `the backend cannot run processes as ${DISPLAY_USER} (${why})`;
      else if (NO_SUCH_USER.test(why))
        noDisplayUser = `the sandbox has no user ${DISPLAY_USER} (${why}); the ${DESKTOP_IMAGE} image has it`;
      else throw err;
    }
    let user: string | undefined = noDisplayUser ? undefined : DISPLAY_USER;
    if (!probe || (!noDisplayUser && probe.owner && probe.owner !== DISPLAY_USER)) {
      probe = await probeDesktop(t.env, t.layout, undefined, timeoutMs);
      user = undefined;
    }
    this.accounts.set(sandbox, { env: t.env, user });
    return { ...t, probe, user, noDisplayUser };
  }

  /**
   * Who can reach the display. `isolated` only when the desktop runs as the display user *and* the
   * sandbox user cannot become it (password-less sudo, as on the ssh image and VMs, reaches any user).
   * For a desktop that is not running: what a start would give.
   */
  private async isolation(
    l: Located,
  ): Promise<Pick<DesktopStatus, 'displayIsolation' | 'displayIsolationReason' | 'displayUser' | 'shellDisplayGranted'>> {
    const sandboxUser = l.env.user ?? 'the sandbox user';
    const mode: DesktopMode = l.probe.running
      ? (l.probe.mode ?? (l.user ? 'isolated' : 'shared'))
      : l.noDisplayUser
        ? 'shared'
        : 'isolated';
    const displayUser = mode === 'isolated' ? DISPLAY_USER : (l.env.user ?? l.probe.whoami);
    if (mode === 'granted') {
      return {
        displayIsolation: 'shared',
        displayIsolationReason: `granted at start (grantShellDisplay): the desktop runs as ${sandboxUser}, whose shell can reach the display and the browser`,
        displayUser,
        shellDisplayGranted: true,
      };
    }
    if (mode === 'shared') {
      return {
        displayIsolation: 'shared',
        displayIsolationReason: `${l.noDisplayUser ?? `the desktop runs as ${sandboxUser}`}: the sandbox's shell can reach the display and the browser`,
        displayUser,
        shellDisplayGranted: false,
      };
    }
    // As the sandbox user (the agent's shell): is it root, or can it sudo to the display user?
    const r = await runIn(l.env, [
      'bash',
      '-c',
      'id -u; sudo -n -u "$1" true 2>/dev/null && echo sudo',
      'sandbox-desk',
      DISPLAY_USER,
    ]).catch(() => null);
    const [uid, sudo] = (r?.stdout.toString('utf8') ?? '').split('\n');
    if (uid === '0') {
      return {
        displayIsolation: 'shared',
        displayIsolationReason: `the sandbox user is root, so its shell can reach every user's files, the display included`,
        displayUser,
        shellDisplayGranted: false,
      };
    }
    if (sudo === 'sudo') {
      return {
        displayIsolation: 'shared',
        displayIsolationReason: `${sandboxUser} may use sudo without a password, so its shell can become ${DISPLAY_USER} and reach the display`,
        displayUser,
        shellDisplayGranted: false,
      };
    }
    if (!r || !uid) {
      return {
        displayIsolation: 'shared',
        displayIsolationReason: `could not check what the sandbox user may do (${r?.stderr.trim() || 'no answer'}): not claiming isolation`,
        displayUser,
        shellDisplayGranted: false,
      };
    }
    return { displayIsolation: 'isolated', displayIsolationReason: null, displayUser, shellDisplayGranted: false };
  }

  /** Starts the desktop, or adopts the one already running; never starts a second one. */
  async start(sandbox: string, opts: DesktopStartOptions = {}): Promise<DesktopStatus> {
    this.statusChanged.fire({ sandbox, cause: 'starting', running: null });
    try {
      const status = await this.startDesktop(sandbox, opts);
      if (status.running) this.crashes.delete(sandbox);
      this.statusChanged.fire({ sandbox, cause: 'started', running: status.running, reason: status.reason });
      return status;
    } catch (err) {
      this.statusChanged.fire({ sandbox, cause: 'start-failed', running: null, error: err });
      throw err;
    }
  }

  private async startDesktop(sandbox: string, opts: DesktopStartOptions): Promise<DesktopStatus> {
    const geometry = opts.geometry ?? this.host.defaultGeometry ?? '1280x800';
    const m = GEOMETRY_RE.exec(geometry);
    if (!m || Number(m[1]) < 320 || Number(m[2]) < 240) {
      throw new SandboxDeskError(
        'invalid_input',
        `geometry must be WIDTHxHEIGHT between 320x240 and 9999x9999, got ${JSON.stringify(geometry)}`,
      );
    }
    const t = await this.target(sandbox, opts.placement);
    if (opts.placement) this.placements.set(sandbox, opts.placement);
    const { env, layout, probe, noDisplayUser } = await this.locate(sandbox, t);
    if (opts.record !== undefined) this.recordings?.setWanted(sandbox, opts.record);
    if (probe.running) return this.startRecording(sandbox);
    if (probe.missing.some((b) => b !== 'chromium')) {
      throw new SandboxDeskError(
        'backend_unavailable',
        `cannot start a desktop in sandbox ${sandbox}: ${missingReason(probe.missing, t.placement.where)}`,
      );
    }
    await this.launch(
      sandbox,
      { env, layout },
      { geometry, mode: opts.grantShellDisplay ? 'granted' : noDisplayUser ? 'shared' : 'isolated' },
    );
    return this.startRecording(sandbox);
  }

  /** Starts the desktop's processes (not running: probed just before) and remembers the account it runs as. */
  private async launch(
    sandbox: string,
    t: { env: SandboxEnvironment; layout: DesktopLayout },
    opts: { geometry: string; mode: DesktopMode },
  ): Promise<void> {
    const user = opts.mode === 'isolated' ? DISPLAY_USER : undefined;
    const tcg = await this.underTcg(sandbox);
    await startDesktopProcess(t.env, t.layout, { ...opts, user, ...(tcg ? { readyTimeoutS: TCG_EXEC_MS / 1000 } : {}) });
    this.accounts.set(sandbox, { env: t.env, user });
  }

  /**
   * A pooled member's desktop, started for the pool (src/pool/) while a person may be watching another
   * desktop: only the work the pool needs — one probe, the launch, its readiness wait. `start` goes on to
   * a status round (a second probe, and the isolation check as the sandbox user: two `docker exec`s the
   * pool throws away, each a process spawned on this event loop plus the engine's work at full CPU
   * weight), tells 'starting'/'started' (an operation row and a pushed event for a sandbox no list
   * shows) and follows the desktop (while a client listens, the watch's relay to a member nobody views).
   * The claim tells and follows it under its new name (`handedOver`); the account learnt here goes with it.
   */
  async startPooled(member: string): Promise<{ running: boolean; reason: string | null }> {
    const t = await this.target(member);
    const { env, layout, probe, noDisplayUser } = await this.locate(member, t);
    if (probe.running) return { running: true, reason: null };
    if (probe.missing.some((b) => b !== 'chromium')) return { running: false, reason: missingReason(probe.missing, t.placement.where) };
    await this.launch(
      member,
      { env, layout },
      { geometry: this.host.defaultGeometry ?? '1280x800', mode: noDisplayUser ? 'shared' : 'isolated' },
    );
    return { running: true, reason: null };
  }

  /**
   * The live connection opens with the desktop (not at the first screenshot), so the recording starts
   * with it — in a long-lived core (recordRunningDesktops); a one-shot CLI process records nothing,
   * the app or an MCP server on the same data dir records the desktop once it sees it running.
   */
  private async startRecording(sandbox: string): Promise<DesktopStatus> {
    if (this.adoptRunning) this.recordings?.ensure(sandbox);
    return this.status(sandbox);
  }

  async stop(sandbox: string): Promise<DesktopStatus> {
    this.stopping.add(sandbox);
    this.crashes.delete(sandbox);
    try {
      this.watch.unwatch(sandbox);
      await this.recordings?.stop(sandbox);
      this.dropConnection(sandbox);
      this.dropAhead(sandbox);
      await this.closeBridge(sandbox);
      const { env, layout, user } = await this.locate(sandbox, await this.target(sandbox));
      await stopDesktopProcess(env, layout, user);
      this.accounts.delete(sandbox);
    } catch (err) {
      this.statusChanged.fire({ sandbox, cause: 'stop-failed', running: null, error: err });
      throw err;
    } finally {
      this.stopping.delete(sandbox);
    }
    const status = await this.status(sandbox);
    this.statusChanged.fire({ sandbox, cause: 'stopped', running: false, reason: null });
    return status;
  }

  /**
   * Stops the desktop if it runs (the sandbox is about to stop: its Chromium gets to quit cleanly
   * first); nothing when it does not. True when there was one to stop.
   */
  async stopIfRunning(sandbox: string): Promise<boolean> {
    const l = await this.locate(sandbox, await this.target(sandbox));
    if (!l.probe.running) return false;
    await this.stop(sandbox);
    return true;
  }

  private notRunning(sandbox: string): SandboxDeskError {
    return new SandboxDeskError('desktop_not_running', `the desktop of sandbox ${sandbox} is not running`, {
      hint: `start it with \`sandbox-desk desktop start ${sandbox}\``,
    });
  }

  private async running(sandbox: string): Promise<Located> {
    const l = await this.locate(sandbox, await this.target(sandbox));
    if (!l.probe.running) throw this.notRunning(sandbox);
    return l;
  }

  /**
   * Runs `fn` against the desktop, as the account that reaches it, without probing first when that
   * account is known (a probe is one more exec per action); only when it fails is the desktop probed,
   * so a stopped desktop reads as `desktop_not_running`, and one restarted as another account is
   * tried once more as that account.
   */
  private async onDesktop<T>(
    sandbox: string,
    fn: (t: { env: SandboxEnvironment; layout: DesktopLayout; user: string | undefined }) => Promise<T>,
  ): Promise<T> {
    const t = await this.target(sandbox);
    const known = this.accounts.get(sandbox);
    const user = known && known.env === t.env ? known.user : (await this.locate(sandbox, t)).user;
    try {
      return await fn({ ...t, user });
    } catch (err) {
      this.accounts.delete(sandbox);
      const l = await this.locate(sandbox, t).catch(() => null);
      if (l && !l.probe.running) throw this.notRunning(sandbox);
      if (l && l.user !== user) return fn({ ...t, user: l.user });
      throw err;
    }
  }

  /**
   * A new raw RFB stream to the desktop's Xvnc (one per viewer: Xvnc shares the screen among them).
   * The caller owns the process: its stdin/stdout are the RFB bytes.
   */
  async openScreenStream(sandbox: string): Promise<DesktopStream> {
    const t = await this.target(sandbox);
    const ahead = this.takeAhead(sandbox, t.env);
    if (ahead) return this.tied(t.env, ahead);
    const { env, stream } = await this.openStream(sandbox, t);
    return this.tied(env, stream);
  }

  /**
   * A new stream to the desktop, not yet tied to its incarnation. Where the account is known (this
   * process started the desktop, probed it, or the pool handed it over) there is no probe before the
   * relay — on a warm desktop's create → first frame the probe was a whole exec — and the desktop is
   * probed only when the relay cannot reach it, so a stopped one still reads as desktop_not_running.
   */
  private async openStream(
    sandbox: string,
    t: { env: SandboxEnvironment; layout: DesktopLayout },
  ): Promise<{ env: SandboxEnvironment; stream: DesktopStream }> {
    const known = this.accounts.get(sandbox);
    if (!known || known.env !== t.env) {
      const { env, layout, user } = await this.running(sandbox);
      return { env, stream: await this.streams.open(env, layout.socket, user) };
    }
    let opened: { stream: DesktopStream; via: 'inbox' | 'stdio' };
    try {
      opened = await this.streams.openSaying(t.env, t.layout.socket, known.user);
    } catch (err) {
      // The socket is not there (or not for this account): probed, so a stopped desktop reads as
      // desktop_not_running as it did, and one restarted as another account is reached as that one.
      this.accounts.delete(sandbox);
      const l = await this.locate(sandbox, t).catch(() => null);
      if (l && !l.probe.running) throw this.notRunning(sandbox);
      if (!l || l.user === known.user) throw err;
      return { env: l.env, stream: await this.streams.open(l.env, l.layout.socket, l.user) };
    }
    if (opened.via === 'inbox') return { env: t.env, stream: opened.stream };
    if (known.checked) {
      // Just handed over, found whole (restoredRunning): the probe would only say it again, a whole exec.
      this.accounts.set(sandbox, { env: known.env, user: known.user });
      return { env: t.env, stream: opened.stream };
    }
    // The stdio relay starts whether or not the socket is there: probed as without a known account.
    try {
      const l = await this.running(sandbox);
      if (l.user === known.user) return { env: t.env, stream: opened.stream };
      opened.stream.kill();
      return { env: l.env, stream: await this.streams.open(l.env, l.layout.socket, l.user) };
    } catch (err) {
      opened.stream.kill();
      throw err;
    }
  }

  /**
   * A pooled sandbox's running desktop handed over at a claim (src/pool/): started by the pool under the
   * member's name, now the user's under `to`. What this process learnt at its start — the account it
   * runs as — follows the name, so the first screen stream opens without a probe; it is told as started
   * and recorded as configured. False (nothing known here: another process filled the pool): the caller
   * takes it up with `start`, which probes.
   */
  handedOver(from: string, to: string, env: SandboxEnvironment, ahead?: DesktopStream): boolean {
    const known = this.accounts.get(from);
    this.accounts.delete(from);
    if (!known) {
      ahead?.kill();
      return false;
    }
    this.takeUp(to, env, known.user, ahead);
    return true;
  }

  /**
   * A VM restored from a desktop template (src/sandbox/qemu/vm-template.ts): its desktop was running in
   * the template's saved memory, started at the build as `user` (its folder already moved to this
   * sandbox's name, its X cookie made its own, its socket there: checked by the hand-over). Taken up as a
   * pool's claim is (`handedOver`): the first screen stream opens without a probe or a start, even
   * through the stdio relay (a VM has no inbox), where a stream of an unchecked desktop is probed.
   */
  restoredRunning(sandbox: string, env: SandboxEnvironment, user: string | undefined, ahead?: DesktopStream): void {
    this.takeUp(sandbox, env, user, ahead, true);
  }

  /**
   * The first screen stream to a restored desktop, opened while the create hands it over (its SSH
   * channel, sudo and relay start overlap the hand-over's): its relay waits in the guest for the RFB
   * socket at `socket`, the folder's new name, then connects; restoredRunning keeps it for the first
   * viewer (as a pool's claim does). A stdio relay (a VM has no inbox), so it is returned at once.
   */
  openRestoredAhead(env: SandboxEnvironment, socket: string, user: string | undefined): DesktopStream {
    return openRelay(env, { unix: socket, waitS: RESTORED_SOCKET_WAIT_S }, user);
  }

  private takeUp(to: string, env: SandboxEnvironment, user: string | undefined, ahead?: DesktopStream, checked?: boolean): void {
    this.accounts.set(to, { env, user, ...(checked ? { checked } : {}) });
    if (ahead) this.keepAhead(to, env, ahead);
    this.crashes.delete(to);
    this.statusChanged.fire({ sandbox: to, cause: 'started', running: true, reason: null });
    if (this.adoptRunning) this.recordings?.ensure(to);
    this.follow(to);
  }

  /**
   * A screen stream to a pooled member's desktop, opened at the fill (before the member is paused) and
   * handed over with it at the claim (`handedOver`), so the claimer's first stream costs no exec: its relay
   * is connected to Xvnc already, and the RFB greeting waits unread, so whoever takes it starts a fresh
   * RFB session (the first frame is the screen as it is then). Not tied to the member's incarnation: that
   * ends at the claim, and the claimed one's store takes the stream when it is used.
   */
  async openAhead(member: string): Promise<DesktopStream> {
    // Right after the pool's start of the desktop: its account is known, so no probe (openStream).
    return (await this.openStream(member, await this.target(member))).stream;
  }

  /** A handed-over stream waits at most this long for the first viewer; then it is closed (no idle relay left behind). */
  static readonly AHEAD_KEEP_MS = 60_000;

  private keepAhead(sandbox: string, env: SandboxEnvironment, stream: DesktopStream): void {
    this.dropAhead(sandbox);
    const timer = setTimeout(() => this.dropAhead(sandbox), DesktopService.AHEAD_KEEP_MS);
    timer.unref();
    const entry = { env, stream, timer, closed: false };
    stream.once('close', () => {
      entry.closed = true;
      if (this.ahead.get(sandbox) === entry) this.dropAhead(sandbox);
    });
    this.ahead.set(sandbox, entry);
  }

  /** The handed-over stream, once, if it is still open and for this incarnation. */
  private takeAhead(sandbox: string, env: SandboxEnvironment): DesktopStream | null {
    const a = this.ahead.get(sandbox);
    if (!a) return null;
    this.ahead.delete(sandbox);
    clearTimeout(a.timer);
    if (a.closed || a.env !== env) {
      a.stream.kill();
      return null;
    }
    return a.stream;
  }

  private dropAhead(sandbox: string): void {
    const a = this.ahead.get(sandbox);
    if (!a) return;
    this.ahead.delete(sandbox);
    clearTimeout(a.timer);
    a.stream.kill();
  }

  /** Registers an exec stream in its incarnation's store: a restart or stop ends it; its own end forgets it. */
  private tied<T extends DesktopStream>(env: SandboxEnvironment, child: T): T {
    const scope = this.host.scopeOf?.(env);
    if (!scope) return child;
    const registration = scope.add(toDisposable(() => child.kill()));
    child.once('close', () => scope.delete(registration));
    return child;
  }

  // ---- the control lease ------------------------------------------------------------------------

  lease(sandbox: string): Lease {
    return this.host.leases.get(sandbox);
  }

  /** A person takes control; the screen's size as the agent has it is remembered with the lease. */
  takeControl(sandbox: string, viewerId: string): Promise<Lease> {
    return this.handover.take(sandbox, viewerId);
  }

  /** The holder gives control back: the screen goes back to the size the agent had (bounded wait). */
  giveBack(sandbox: string, viewerId: string): Promise<Lease> {
    return this.handover.giveBack(sandbox, viewerId);
  }

  /**
   * Puts the screen back to a size, over the live connection (its next frame has it). The size it has
   * is asked of the X server first (the live connection may not have seen a viewer's resize yet), and a
   * screen already that size is left alone: no needless RandR change under the desktop's programs.
   */
  private async putScreenSize(sandbox: string, size: ScreenSize): Promise<void> {
    const { probe } = await this.running(sandbox);
    if (probe.geometry === `${size.width}x${size.height}`) return;
    await this.screen(sandbox).resize(size.width, size.height);
  }

  /**
   * The screen's size now: the live connection's when it is up (no exec), else the desktop probe's
   * (xdpyinfo in the sandbox); null when the desktop is not running.
   */
  private async screenSizeNow(sandbox: string): Promise<ScreenSize | null> {
    const live = this.screens.get(sandbox)?.lastScreen;
    if (live && live.width > 0 && live.height > 0) return live;
    const { probe } = await this.locate(sandbox, await this.target(sandbox));
    const m = probe.running ? /^(\d+)x(\d+)$/.exec(probe.geometry ?? '') : null;
    return m ? { width: Number(m[1]), height: Number(m[2]) } : null;
  }

  /** null while the agent may act; the refusal while a human holds the lease (read fresh each time). */
  private humanHasControl(sandbox: string): SandboxDeskError | null {
    const lease = this.host.leases.get(sandbox);
    if (lease.holder !== 'human') return null;
    return new SandboxDeskError(
      'human_has_control',
      `a human holds the control lease of sandbox ${sandbox}'s desktop${lease.reason ? ` (${lease.reason})` : ''}`,
      {
        hint: 'wait until the viewer gives control back',
      },
    );
  }

  /**
   * Throws human_has_control while a person holds the lease; `attempt` says what the agent tried, so the
   * refusal is told (onActionRefused) to the person's window and the replay rather than only to the agent.
   */
  private assertAgentMayAct(
    sandbox: string,
    attempt: { kind: string; target?: { x: number; y: number } | null; session?: string | null },
  ): void {
    const refusal = this.humanHasControl(sandbox);
    if (!refusal) return;
    const now = Date.now();
    const every = this.host.refusalTellEveryMs ?? REFUSAL_TELL_EVERY_MS;
    if (now - (this.refusalToldAt.get(sandbox) ?? -Infinity) < every) throw refusal;
    this.refusalToldAt.set(sandbox, now);
    this.actionRefused.fire({
      sandbox,
      at: new Date().toISOString(),
      kind: attempt.kind,
      target: attempt.target ?? null,
      session: attempt.session ?? null,
      viewerId: this.host.leases.get(sandbox).viewerId,
      message: refusal.message,
    });
    throw refusal;
  }

  /**
   * Waits until the agent may act (no person holds control), at most `timeoutMs`; answers on a timeout
   * too (`timedOut`), never throws for it. A give-back in any process on this data dir ends it (control-wait.ts).
   */
  async waitForControl(sandbox: string, timeoutMs: number, onWaiting?: (lease: Lease) => void): Promise<ControlWait> {
    await this.host.provider(sandbox); // a sandbox that does not exist is an error, not "you may act"
    const leases = this.host.leases;
    return waitForControl(
      sandbox,
      { read: (s) => leases.get(s), onChanged: leases.onChanged, dataVersion: () => leases.dataVersion(), pollMs: this.host.controlPollMs },
      timeoutMs,
      onWaiting,
    );
  }

  // ---- agent actions ------------------------------------------------------------------------------

  private stoppingError(sandbox: string): SandboxDeskError {
    return new SandboxDeskError('desktop_not_running', `the desktop of sandbox ${sandbox} is stopping`, {
      hint: `start it again with \`sandbox-desk desktop start ${sandbox}\``,
    });
  }

  /** The live connection of a sandbox's desktop (made on first use, remade after it drops). */
  private screen(sandbox: string): LiveScreen {
    if (this.stopping.has(sandbox)) throw this.stoppingError(sandbox);
    let s = this.screens.get(sandbox);
    if (!s) {
      s = new LiveScreen(() => this.openLiveLink(sandbox), { stopping: () => this.stoppingError(sandbox) });
      this.screens.set(sandbox, s);
    }
    return s;
  }

  /**
   * One (re)connection: the RFB relay and the pointer probe, both as the desktop's account (the same
   * account the screen relays use; see locate()). Probed first, so a stopped desktop reads as
   * desktop_not_running rather than a broken pipe.
   */
  private async openLiveLink(sandbox: string): Promise<LiveLink> {
    const { env, layout, user, probe: found } = await this.running(sandbox);
    // Tied to the incarnation: a restart or stop kills the relay, and the next use reconnects.
    const relay = this.tied(env, await this.streams.open(env, layout.socket, user));
    const probe = new PointerProbe(remoteArgv(env, { user, interactive: false }, pointerProbeWords(displayEnv(layout))));
    // The input-only RFB connection's relays (input-channel.ts): opened on the first action, again after a drop.
    const inputRelays = new Set<DesktopStream>();
    let disposed = false;
    return {
      transport: transportFromStreams(relay.stdout, relay.stdin, () => relay.kill()),
      desktopId: createHash('sha256')
        .update(`${JSON.stringify(env.incarnation ?? null)}|${found.pid}`)
        .digest('hex')
        .slice(0, 8),
      measurePointer: async () => {
        const { x, y } = await probe.measure();
        return { x, y };
      },
      // A probe that cannot answer (python3 missing, a slow start) leaves the frame without a generation
      // (checked by size and desktop run only, as before) rather than failing the screenshot.
      generation: () =>
        probe.measure(5000, true).then(
          (a) => a.generation,
          () => undefined,
        ),
      xdotoolKeys: (combos) => runXdotoolKeys(env, layout, combos, user),
      openInput: async () => {
        const input = this.tied(env, await this.streams.open(env, layout.socket, user));
        // Opened after the link was disposed (a reconnect meanwhile): nobody would end it.
        if (disposed) input.kill();
        inputRelays.add(input);
        input.once('close', () => inputRelays.delete(input));
        return transportFromStreams(input.stdout, input.stdin, () => input.kill());
      },
      dispose: () => {
        disposed = true;
        relay.kill();
        for (const input of inputRelays) input.kill();
        probe.dispose();
      },
    };
  }

  private closeScreen(sandbox: string): void {
    this.screens.get(sandbox)?.dispose();
    this.screens.delete(sandbox);
  }

  /** The desktop stops: its live connection goes, but its frames stay known (stale after the restart). */
  private dropConnection(sandbox: string): void {
    this.screens.get(sandbox)?.disconnect();
  }

  /**
   * Moves, clicks, drags, scrolls, types or presses keys over the live RFB connection; coordinates are
   * the frame's when `frameId` names one (else the screen's). Returns the pointer measured after it.
   */
  async act(sandbox: string, action: AgentAction | ScreenAction, opts: ActOptions = {}): Promise<ActionResult> {
    this.assertAgentMayAct(sandbox, {
      kind: action.kind,
      target: 'x' in action ? { x: action.x, y: action.y } : null,
      session: opts.session,
    });
    const screen = this.screen(sandbox);
    const result = await screen.act(action, opts.frameId);
    this.recordAction(sandbox, screen, action.kind, result, opts.frameId, opts.session ?? null);
    return result;
  }

  /** Writes the action for viewers (atomically: a reader never sees half a file); a failure only logs nothing. */
  private recordAction(
    sandbox: string,
    screen: LiveScreen,
    kind: string,
    r: ActionResult,
    frameId: string | undefined,
    session: string | null,
  ): void {
    const dir = this.host.actionsDir;
    if (!dir) return;
    const shot = frameId === undefined ? undefined : screen.imageOf(frameId);
    const view: AgentActionView = {
      sandbox,
      at: new Date().toISOString(),
      kind,
      target: r.target ?? null,
      pointer: r.pointer,
      screen: screen.lastScreen,
      session,
      frame:
        shot && frameId
          ? {
              frameId,
              width: shot.width,
              height: shot.height,
              image: `data:${MIME[shot.format]};base64,${shot.image.toString('base64')}`,
              ...(shot.takenAt ? { takenAt: shot.takenAt } : {}),
            }
          : null,
    };
    const file = actionFile(dir, sandbox);
    void mkdir(dir, { recursive: true })
      .then(() => writeFile(`${file}.tmp`, JSON.stringify(view)))
      .then(() => rename(`${file}.tmp`, file))
      .then(() => this.actionRecorded.fire({ sandbox, action: view }))
      .catch(() => undefined);
  }

  /** The last agent action on this sandbox's desktop (from any process), or null. */
  async lastAction(sandbox: string): Promise<AgentActionView | null> {
    const dir = this.host.actionsDir;
    if (!dir) return null;
    try {
      return JSON.parse(await readFile(actionFile(dir, sandbox), 'utf8')) as AgentActionView;
    } catch {
      return null;
    }
  }

  /** The same action through one `docker exec xdotool` (the old path; the benchmark's baseline). */
  async actWithXdotool(sandbox: string, action: AgentAction): Promise<void> {
    this.assertAgentMayAct(sandbox, { kind: action.kind, target: 'x' in action ? { x: action.x, y: action.y } : null });
    await this.onDesktop(sandbox, ({ env, layout, user }) => runXdotool(env, layout, action, user));
  }

  /** The desktop's clipboard text (desktop-clipboard.ts); over `maxBytes` is refused. */
  async clipboard(sandbox: string, maxBytes: number): Promise<string> {
    return this.onDesktop(sandbox, ({ env, layout, user }) => readClipboard(env, layout, user, maxBytes));
  }

  /** Sets the desktop's clipboard, as an agent acts: refused while a human holds control. */
  async setClipboard(sandbox: string, text: string, maxBytes: number): Promise<number> {
    this.assertAgentMayAct(sandbox, { kind: 'set the clipboard' });
    return this.onDesktop(sandbox, ({ env, layout, user }) => writeClipboard(env, layout, user, text, maxBytes));
  }

  async pointer(sandbox: string): Promise<{ x: number; y: number }> {
    return this.onDesktop(sandbox, ({ env, layout, user }) => pointerLocation(env, layout, user));
  }

  /**
   * A frame of the live framebuffer (no new connection), optionally scaled into a maximum size. Read-only,
   * so allowed while a person holds control (issue 36): the agent sees what the person does.
   */
  async screenshot(sandbox: string, opts: ScreenshotOptions = {}): Promise<Shot> {
    return this.screen(sandbox).screenshot(opts);
  }

  /** Today's screenshot path: a fresh RFB connection through a new exec relay (the benchmark's baseline). */
  async screenshotFreshConnection(sandbox: string): Promise<Buffer> {
    return this.withRfb(sandbox, (rfb) => rfb.screenshot());
  }

  /** Waits until something paints (inside `region`, screen pixels) or the timeout; returns the frame it ended on. Read-only, as screenshot. */
  async waitForChange(
    sandbox: string,
    opts: { region?: RectArea; timeoutMs: number } & ScreenshotOptions,
  ): Promise<Shot & { changed: boolean }> {
    checkTimeout(opts.timeoutMs);
    const screen = this.screen(sandbox);
    const changed = await screen.waitForChange(opts);
    return { changed, ...(await screen.screenshot(opts)) };
  }

  /** Waits until nothing has painted for quietMs (or the timeout); returns the frame it ended on. Read-only, as screenshot. */
  async waitUntilStable(
    sandbox: string,
    opts: { quietMs: number; timeoutMs: number } & ScreenshotOptions,
  ): Promise<Shot & { stable: boolean }> {
    checkTimeout(opts.timeoutMs);
    // The live connection samples the screen every UPDATE_INTERVAL_MS: quiet must span at least two samples.
    const minQuiet = 2 * UPDATE_INTERVAL_MS;
    if (!Number.isInteger(opts.quietMs) || opts.quietMs < minQuiet || opts.quietMs > 60_000) {
      throw new SandboxDeskError('invalid_input', `quietMs must be a whole number of milliseconds ${minQuiet}–60000, got ${opts.quietMs}`, {
        hint: `the screen is sampled every ${UPDATE_INTERVAL_MS} ms, so shorter quiet cannot be told from a busy screen`,
      });
    }
    const screen = this.screen(sandbox);
    const stable = await screen.waitUntilStable(opts);
    return { stable, ...(await screen.screenshot(opts)) };
  }

  async resize(sandbox: string, width: number, height: number): Promise<void> {
    this.assertAgentMayAct(sandbox, { kind: `resize to ${width}x${height}` });
    if (!GEOMETRY_RE.test(`${width}x${height}`)) throw new SandboxDeskError('invalid_input', `cannot resize to ${width}x${height}`);
    await this.withRfb(sandbox, (rfb) => rfb.resize(width, height));
  }

  private withRfb<T>(sandbox: string, fn: (rfb: RfbClient) => Promise<T>): Promise<T> {
    return this.onDesktop(sandbox, async ({ env, layout, user }) => {
      const stream = this.tied(env, await this.streams.open(env, layout.socket, user));
      try {
        const rfb = await RfbClient.connect(transportFromStreams(stream.stdout, stream.stdin, () => stream.kill()));
        try {
          return await fn(rfb);
        } finally {
          rfb.close();
        }
      } finally {
        stream.kill();
      }
    });
  }

  // ---- the browser ------------------------------------------------------------------------------

  /**
   * The desktop Chromium's DevTools endpoint on a loopback port here (see cdp-bridge.ts), so Playwright
   * or Puppeteer on the host can `connectOverCDP`. Chromium has no DevTools port in the sandbox: the
   * endpoint reaches its pipe relay as the desktop's account. Refused while a human holds the lease;
   * connections already open are closed when a human takes it.
   */
  async browserEndpoint(sandbox: string): Promise<{ httpUrl: string; webSocketDebuggerUrl: string; localPort: number }> {
    this.assertAgentMayAct(sandbox, { kind: 'open the browser endpoint' });
    const { env, layout, user } = await this.running(sandbox);
    // In a VM under TCG Chromium's first start takes tens of seconds and each relay's start seconds
    // (bench/vm.ts): longer bounds there, and said in `status`.
    const tcg = await this.underTcg(sandbox);
    const answerMs = tcg ? 60_000 : 3000;
    let pending = this.bridges.get(sandbox);
    if (!pending) {
      const opened = CdpBridge.listen({
        openUpstream: () => openRelay(env, { unix: layout.cdpSocket }, user),
        refusal: () => this.humanHasControl(sandbox),
        ...(tcg ? { answerTimeoutMs: answerMs } : {}),
      });
      pending = opened;
      this.bridges.set(sandbox, opened);
      // The bridge relays into this incarnation only: when it ends, so does the bridge (no stale port).
      this.host.scopeOf?.(env)?.add(
        toDisposable(() => {
          if (this.bridges.get(sandbox) === opened) this.bridges.delete(sandbox);
          void opened.then(
            (b) => b.dispose(),
            () => undefined,
          );
        }),
      );
      opened.catch(() => {
        if (this.bridges.get(sandbox) === opened) this.bridges.delete(sandbox);
      });
    }
    const bridge = await pending;
    // Chromium opens its pipe a moment after the display is ready: poll it, bounded.
    const deadline = Date.now() + (tcg ? BROWSER_WAIT_TCG_MS : 15_000);
    let last = '';
    while (Date.now() < deadline) {
      try {
        await bridge.version(answerMs);
        return { httpUrl: bridge.httpUrl, webSocketDebuggerUrl: bridge.webSocketDebuggerUrl, localPort: bridge.localPort };
      } catch (err) {
        last = (err as Error).message;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new SandboxDeskError('backend_unavailable', `the desktop browser's DevTools did not answer${last ? ` (${last})` : ''}`, {
      hint: 'is chromium (and python3, for its DevTools relay) installed in the sandbox image? see `sandbox-desk desktop status`',
    });
  }

  /** A VM under TCG (software CPU): every exec there takes seconds, so the desktop's bounds are longer. */
  private async underTcg(sandbox: string): Promise<boolean> {
    return this.host.accel ? (await this.host.accel(sandbox).catch(() => null)) === 'tcg' : false;
  }

  private async closeBridge(sandbox: string): Promise<void> {
    const pending = this.bridges.get(sandbox);
    this.bridges.delete(sandbox);
    if (pending) (await pending.catch(() => null))?.dispose();
  }

  async close(): Promise<void> {
    this.watch.dispose();
    this.statusChanged.dispose();
    await this.recordings?.close();
    this.recordingChanged.dispose();
    this.actionRecorded.dispose();
    this.actionRefused.dispose();
    for (const name of [...this.screens.keys()]) this.closeScreen(name);
    for (const name of [...this.bridges.keys()]) await this.closeBridge(name);
    for (const name of [...this.ahead.keys()]) this.dropAhead(name);
    this.streams.dispose();
  }
}

function actionFile(dir: string, sandbox: string): string {
  // Sandbox names are validated elsewhere; hashing keeps the file name safe whatever they hold.
  return join(dir, `${createHash('sha256').update(sandbox).digest('hex').slice(0, 16)}.json`);
}

function checkTimeout(ms: number): void {
  if (!Number.isInteger(ms) || ms < 1 || ms > 120_000)
    throw new SandboxDeskError('invalid_input', `timeout must be a whole number of milliseconds 1–120000, got ${ms}`);
}

/**
 * Said, never hidden: Chromium in a VM without KVM. Figures from bench/vm.ts on the dev machine (2 shared
 * cores): vm-chromium-page-load-ms and vm-desktop-first-frame-ms (bench/results/vm.json).
 */
/** A desktop probe's and start's bound in a VM under TCG (30 s elsewhere): seen over 30 s under load. */
const TCG_EXEC_MS = 180_000;
/** How long a restored desktop's first stream waits in the guest for the socket the hand-over moves (TCG: seconds). */
const RESTORED_SOCKET_WAIT_S = 120;
/** How long `browserEndpoint` waits for DevTools in a VM under TCG (Chromium's first start there). */
const BROWSER_WAIT_TCG_MS = 180_000;

export const TCG_BROWSER_NOTE =
  'the VM runs under TCG (QEMU emulates the CPU in software; no KVM here): Chromium works but is slow — measured here, a local page loaded in 3.8 s (43× the host Chromium) and its first start took 78 s (bench/vm.ts: vm-chromium-page-load-ms)';

function missingReason(missing: string[], where: 'sandbox' | 'host'): string {
  const what = `lacks ${missing.join(', ')}`;
  if (where === 'host') return `this machine ${what}; install tigervnc-standalone-server, xfce4, dbus-x11, chromium, xdotool and socat`;
  const onlyBrowser = missing.length === 1 && missing[0] === 'chromium';
  return `the sandbox ${what}${onlyBrowser ? ' (the desktop runs without a browser)' : ''}; a docker sandbox from ${DESKTOP_IMAGE} (--image ${DESKTOP_IMAGE}) has the whole desktop, other backends need those packages in their image`;
}

function hostDisplay(sandbox: string): number {
  return 30 + (createHash('sha256').update(sandbox).digest()[0]! % 60);
}
