import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { SandboxDeskError } from '../shared/errors.js';
import { LocalProvider } from '../sandbox/local/local-provider.js';
import type { SandboxEnvironment, SandboxProvider } from '../sandbox/provider.js';
import { toDisposable, type DisposableStore } from '../shared/lifecycle.js';
import type { Lease, LeaseStore } from '../store/lease-store.js';
import type { DesktopStatus } from '../shared/desktop-types.js';

export type { DesktopStatus } from '../shared/desktop-types.js';
import { pointerLocation, runXdotool, type AgentAction } from './agent-actions.js';
import { CDP_PORT, DESKTOP_IMAGE, desktopLayout, probeDesktop, startDesktopProcess, stopDesktopProcess, type DesktopLayout } from './desktop-runtime.js';
import { resolvePlacement, type Placement, type PlacementSetting } from './placement.js';
import { forwardPort, type PortForward } from './port-forward.js';
import { openRelay } from './relay.js';
import { RfbClient, transportFromStreams } from './rfb-client.js';

/** What the desktop service needs from the core: live environments and the lease store. */
export interface DesktopHost {
  /** The connected environment of a running sandbox (throws sandbox_not_running etc.). */
  environment(sandbox: string): Promise<SandboxEnvironment>;
  provider(sandbox: string): SandboxProvider | Promise<SandboxProvider>;
  leases: LeaseStore;
  /** The store of the environment's incarnation: forwards and screen streams end with it. */
  scopeOf?(env: SandboxEnvironment): DisposableStore | null;
}

export interface DesktopStartOptions {
  placement?: PlacementSetting;
  geometry?: string;
}

const GEOMETRY_RE = /^(\d{3,4})x(\d{3,4})$/;
/** Inside a sandbox the display number is the sandbox's own; on the host, spread them out. */
const SANDBOX_DISPLAY = 20;

/**
 * The bot desktop of each sandbox: start/stop/status, the screen stream for viewers, agent actions
 * behind the control lease, and the browser's DevTools endpoint. Every process it starts goes through
 * the environment's execPrefix, so any backend with streams gets all of it.
 */
export class DesktopService {
  private readonly forwards = new Map<string, Promise<PortForward>>();
  private readonly placements = new Map<string, PlacementSetting>();
  private hostEnv: Promise<SandboxEnvironment> | null = null;

  constructor(private readonly host: DesktopHost) {}

  private async placementFor(sandbox: string, setting?: PlacementSetting): Promise<Placement> {
    const provider = await this.host.provider(sandbox);
    return resolvePlacement(setting ?? this.placements.get(sandbox) ?? 'auto', { name: provider.name, supportsStreams: provider.supportsStreams });
  }

  /** The environment the desktop runs in, and where it lives there. Refused placements throw. */
  private async target(sandbox: string, setting?: PlacementSetting): Promise<{ env: SandboxEnvironment; layout: DesktopLayout; placement: Placement & { where: 'sandbox' | 'host' } }> {
    const placement = await this.placementFor(sandbox, setting);
    if (placement.where === 'refused') throw new SandboxDeskError('placement_refused', `desktop refused for sandbox ${sandbox}: ${placement.reason}`);
    const sandboxEnv = await this.host.environment(sandbox);
    if (placement.where === 'sandbox' || (await this.host.provider(sandbox)).name === 'local') {
      const display = placement.where === 'sandbox' ? SANDBOX_DISPLAY : hostDisplay(sandbox);
      return { env: sandboxEnv, layout: desktopLayout(sandboxEnv, sandbox, display), placement };
    }
    // An explicit host placement for a sandboxed backend: the desktop runs on this machine.
    this.hostEnv ??= new LocalProvider().createEnvironment({ cwd: '~', sandbox: { name: 'host', backendRef: null, image: null, user: null, mounts: [], env: {}, options: {} } });
    const env = await this.hostEnv;
    return { env, layout: desktopLayout(env, sandbox, hostDisplay(sandbox)), placement };
  }

  async status(sandbox: string, opts: { placement?: PlacementSetting } = {}): Promise<DesktopStatus> {
    const lease = this.host.leases.get(sandbox);
    const base = { sandbox, leaseHolder: lease.holder, leaseViewer: lease.viewerId };
    const placement = await this.placementFor(sandbox, opts.placement);
    if (placement.where === 'refused') {
      return { ...base, running: false, placement: 'refused', display: null, geometry: null, missing: [], reason: placement.reason, chromiumSandbox: null };
    }
    const { env, layout } = await this.target(sandbox, opts.placement);
    const probe = await probeDesktop(env, layout);
    const reason = probe.missing.length ? missingReason(probe.missing, placement.where) : probe.failed;
    return {
      ...base,
      running: probe.running,
      placement: placement.where,
      display: probe.running ? `:${layout.display}` : null,
      geometry: probe.geometry,
      missing: probe.missing,
      reason,
      chromiumSandbox: probe.chromiumSandbox,
    };
  }

  /** Starts the desktop, or adopts the one already running; never starts a second one. */
  async start(sandbox: string, opts: DesktopStartOptions = {}): Promise<DesktopStatus> {
    const geometry = opts.geometry ?? '1280x800';
    const m = GEOMETRY_RE.exec(geometry);
    if (!m || Number(m[1]) < 320 || Number(m[2]) < 240) {
      throw new SandboxDeskError('invalid_input', `geometry must be WIDTHxHEIGHT between 320x240 and 9999x9999, got ${JSON.stringify(geometry)}`);
    }
    const { env, layout, placement } = await this.target(sandbox, opts.placement);
    if (opts.placement) this.placements.set(sandbox, opts.placement);
    const probe = await probeDesktop(env, layout);
    if (probe.running) return this.status(sandbox);
    if (probe.missing.some((b) => b !== 'chromium')) {
      throw new SandboxDeskError('backend_unavailable', `cannot start a desktop in sandbox ${sandbox}: ${missingReason(probe.missing, placement.where)}`);
    }
    await startDesktopProcess(env, layout, { geometry });
    return this.status(sandbox);
  }

  async stop(sandbox: string): Promise<DesktopStatus> {
    await this.closeForward(sandbox);
    const { env, layout } = await this.target(sandbox);
    await stopDesktopProcess(env, layout);
    return this.status(sandbox);
  }

  private notRunning(sandbox: string): SandboxDeskError {
    return new SandboxDeskError('desktop_not_running', `the desktop of sandbox ${sandbox} is not running`, { hint: `start it with \`sandbox-desk desktop start ${sandbox}\`` });
  }

  private async running(sandbox: string): Promise<{ env: SandboxEnvironment; layout: DesktopLayout }> {
    const t = await this.target(sandbox);
    if (!(await probeDesktop(t.env, t.layout)).running) throw this.notRunning(sandbox);
    return t;
  }

  /**
   * Runs `fn` against the desktop without probing first (a probe is one more exec per action); only
   * when it fails is the desktop probed, so a stopped desktop reads as `desktop_not_running`.
   */
  private async onDesktop<T>(sandbox: string, fn: (t: { env: SandboxEnvironment; layout: DesktopLayout }) => Promise<T>): Promise<T> {
    const t = await this.target(sandbox);
    try {
      return await fn(t);
    } catch (err) {
      const probe = await probeDesktop(t.env, t.layout).catch(() => null);
      if (probe && !probe.running) throw this.notRunning(sandbox);
      throw err;
    }
  }

  /**
   * A new raw RFB stream to the desktop's Xvnc (one per viewer: Xvnc shares the screen among them).
   * The caller owns the process: its stdin/stdout are the RFB bytes.
   */
  async openScreenStream(sandbox: string): Promise<ChildProcessWithoutNullStreams> {
    const { env, layout } = await this.running(sandbox);
    return this.tied(env, openRelay(env, { unix: layout.socket }));
  }

  /** Registers an exec stream in its incarnation's store: a restart or stop ends it; its own end forgets it. */
  private tied<T extends ChildProcessWithoutNullStreams>(env: SandboxEnvironment, child: T): T {
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

  takeControl(sandbox: string, viewerId: string): Lease {
    return this.host.leases.acquire(sandbox, viewerId);
  }

  giveBack(sandbox: string, viewerId: string): Lease {
    return this.host.leases.release(sandbox, viewerId);
  }

  private assertAgentMayAct(sandbox: string): void {
    const lease = this.host.leases.get(sandbox);
    if (lease.holder === 'human') {
      throw new SandboxDeskError('human_has_control', `a human holds the control lease of sandbox ${sandbox}'s desktop${lease.reason ? ` (${lease.reason})` : ''}`, {
        hint: 'wait until the viewer gives control back',
      });
    }
  }

  // ---- agent actions ------------------------------------------------------------------------------

  async act(sandbox: string, action: AgentAction): Promise<void> {
    this.assertAgentMayAct(sandbox);
    await this.onDesktop(sandbox, ({ env, layout }) => runXdotool(env, layout.display, action));
  }

  async pointer(sandbox: string): Promise<{ x: number; y: number }> {
    return this.onDesktop(sandbox, ({ env, layout }) => pointerLocation(env, layout.display));
  }

  /** A PNG of the real framebuffer, read over RFB. */
  async screenshot(sandbox: string): Promise<Buffer> {
    this.assertAgentMayAct(sandbox);
    return this.withRfb(sandbox, (rfb) => rfb.screenshot());
  }

  async resize(sandbox: string, width: number, height: number): Promise<void> {
    this.assertAgentMayAct(sandbox);
    if (!GEOMETRY_RE.test(`${width}x${height}`)) throw new SandboxDeskError('invalid_input', `cannot resize to ${width}x${height}`);
    await this.withRfb(sandbox, (rfb) => rfb.resize(width, height));
  }

  private withRfb<T>(sandbox: string, fn: (rfb: RfbClient) => Promise<T>): Promise<T> {
    return this.onDesktop(sandbox, async ({ env, layout }) => {
      const stream = this.tied(env, openRelay(env, { unix: layout.socket }));
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

  // ---- the browser --------------------------------------------------------------------------------

  /**
   * The desktop Chromium's DevTools endpoint, forwarded to a loopback port here, so Playwright or
   * Puppeteer on the host can `connectOverCDP` to the browser inside the sandbox.
   */
  async browserEndpoint(sandbox: string): Promise<{ httpUrl: string; webSocketDebuggerUrl: string; localPort: number }> {
    const { env } = await this.running(sandbox);
    let fwd = this.forwards.get(sandbox);
    if (!fwd) {
      const opened = forwardPort(env, CDP_PORT);
      fwd = opened;
      this.forwards.set(sandbox, opened);
      // The forward relays into this incarnation only: when it ends, so does the forward (no stale port).
      this.host.scopeOf?.(env)?.add(toDisposable(() => {
        if (this.forwards.get(sandbox) === opened) this.forwards.delete(sandbox);
        void opened.then((f) => f.dispose(), () => undefined);
      }));
      opened.catch(() => {
        if (this.forwards.get(sandbox) === opened) this.forwards.delete(sandbox);
      });
    }
    const { localPort } = await fwd;
    const httpUrl = `http://127.0.0.1:${localPort}`;
    // Chromium opens its DevTools port a moment after the display is ready: poll it, bounded.
    const deadline = Date.now() + 15_000;
    let last = '';
    while (Date.now() < deadline) {
      try {
        const info = (await (await fetch(`${httpUrl}/json/version`)).json()) as { webSocketDebuggerUrl?: string };
        if (info.webSocketDebuggerUrl) {
          const ws = info.webSocketDebuggerUrl.replace(/^ws:\/\/[^/]+/, `ws://127.0.0.1:${localPort}`);
          return { httpUrl, webSocketDebuggerUrl: ws, localPort };
        }
      } catch (err) {
        last = (err as Error).message;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new SandboxDeskError('backend_unavailable', `the desktop browser's DevTools endpoint did not answer${last ? ` (${last})` : ''}`, {
      hint: 'is chromium installed in the sandbox image? see `sandbox-desk desktop status`',
    });
  }

  private async closeForward(sandbox: string): Promise<void> {
    const fwd = this.forwards.get(sandbox);
    this.forwards.delete(sandbox);
    const f = fwd ? await fwd.catch(() => null) : null;
    if (f) {
      f.dispose();
      await f.closed;
    }
  }

  async close(): Promise<void> {
    for (const name of [...this.forwards.keys()]) await this.closeForward(name);
  }
}

function missingReason(missing: string[], where: 'sandbox' | 'host'): string {
  const what = `lacks ${missing.join(', ')}`;
  if (where === 'host') return `this machine ${what}; install tigervnc-standalone-server, xfce4, dbus-x11, chromium, xdotool and socat`;
  const onlyBrowser = missing.length === 1 && missing[0] === 'chromium';
  return `the sandbox ${what}${onlyBrowser ? ' (the desktop runs without a browser)' : ''}; a docker sandbox from ${DESKTOP_IMAGE} (--image ${DESKTOP_IMAGE}) has the whole desktop, other backends need those packages in their image`;
}

function hostDisplay(sandbox: string): number {
  return 30 + (createHash('sha256').update(sandbox).digest()[0]! % 60);
}
