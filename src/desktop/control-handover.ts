import { SandboxDeskError } from '../shared/errors.js';
import type { Lease, LeaseStore, ScreenSize } from '../store/lease-store.js';

/**
 * Control that hands the screen back as it found it (issue 36, item 2). A person taking control may
 * resize the remote desktop to their pane (the viewer's "Resize to pane"); the agent's frames and
 * coordinates are of the size it had. So the size the desktop has when a person takes control from
 * the agent is remembered with the lease (it outlives what the lease outlives: restores, restarts, an
 * app restart), and put back when control returns to the agent — a give-back, or the holder's viewer
 * leaving (stream-server.ts), both through `giveBack`.
 *
 * Done here, in the core, rather than by making every viewer scale instead of resizing: any viewer
 * (the window, a popped-out tab, a plain VNC client on the ticketed stream) gets the same guarantee,
 * and the person keeps 1:1 pixels while they drive.
 */
export interface HandoverHost {
  leases: LeaseStore;
  /** The desktop's screen size now; null when it is not running. */
  screenSize(sandbox: string): Promise<ScreenSize | null>;
  /** Resizes the desktop (on the core's live connection, so the agent's next frame has the size). */
  resize(sandbox: string, size: ScreenSize): Promise<void>;
  /** Something the person should be able to find out later (the app's log). */
  warn?(sandbox: string, message: string): void;
}

export interface HandoverLimits {
  /** How long taking control waits to read the screen's size before taking it without remembering. */
  readMs: number;
  /** How long a give-back waits for the resize back; past it the answer comes and the resize goes on. */
  restoreWaitMs: number;
}

export const HANDOVER_LIMITS: HandoverLimits = { readMs: 3000, restoreWaitMs: 10_000 };

/** A screen size as the agent may ask for one (`desktop start --geometry`, `resize`): 3–4 digits a side. */
export const GEOMETRY_RE = /^(\d{3,4})x(\d{3,4})$/;

/**
 * Whether a size is one the agent could give its own screen (GEOMETRY_RE). The size is read from inside
 * the sandbox, which may lie: anything else is not remembered, so a forged answer cannot make a
 * give-back resize the screen to something the agent could not ask for.
 */
export function isAgentScreenSize(s: ScreenSize): boolean {
  return GEOMETRY_RE.test(`${s.width}x${s.height}`);
}

export class ControlHandover {
  constructor(
    private readonly host: HandoverHost,
    private readonly limits: HandoverLimits = HANDOVER_LIMITS,
  ) {}

  /**
   * A person takes control. The size is read before the lease is granted: the viewer resizes only once
   * it holds control, so the size remembered is always the agent's, never the person's pane.
   */
  async take(sandbox: string, viewerId: string): Promise<Lease> {
    const cur = this.host.leases.get(sandbox);
    if (cur.holder === 'human' && cur.viewerId === viewerId) return cur;
    // From another person: the store keeps the size the first one found.
    const agentScreen = cur.holder === 'agent' ? await this.readScreen(sandbox) : null;
    return this.host.leases.acquire(sandbox, viewerId, undefined, agentScreen);
  }

  /**
   * The holder gives control back (a no-op for anyone else). The lease changes hands at once; the
   * answer waits for the screen to be back at the agent's size (bounded), so the agent's next
   * screenshot has it.
   */
  async giveBack(sandbox: string, viewerId: string): Promise<Lease> {
    const { lease, restore } = this.host.leases.handBack(sandbox, viewerId);
    if (restore) await this.restore(sandbox, restore);
    return lease;
  }

  private async readScreen(sandbox: string): Promise<ScreenSize | null> {
    const read = this.host.screenSize(sandbox).then(
      (s) => ({ s }),
      (err: unknown) => ({ err }),
    );
    const got = await within(read, this.limits.readMs);
    if (got === TIMED_OUT) {
      this.warn(
        sandbox,
        `taking control: the desktop's screen size could not be read within ${this.limits.readMs} ms, so it is not remembered and giving control back will not put it back`,
      );
      return null;
    }
    if ('err' in got) {
      // Not running (or stopping): nothing to remember, nothing to say.
      if (!(got.err instanceof SandboxDeskError && got.err.code === 'desktop_not_running'))
        this.warn(
          sandbox,
          `taking control: could not read the desktop's screen size (${errorText(got.err)}); giving control back will not put it back`,
        );
      return null;
    }
    if (got.s && !isAgentScreenSize(got.s)) {
      this.warn(
        sandbox,
        `taking control: the desktop reported a screen size of ${got.s.width}x${got.s.height}, outside 100–9999 a side: not remembered`,
      );
      return null;
    }
    return got.s;
  }

  private async restore(sandbox: string, size: ScreenSize): Promise<void> {
    const done = this.host.resize(sandbox, size).then(
      () => undefined,
      (err: unknown) => {
        // A desktop that is not running has no screen to put back; its next start picks its own size.
        if (err instanceof SandboxDeskError && err.code === 'desktop_not_running') return;
        this.warn(
          sandbox,
          `giving control back: could not put the screen back to ${size.width}x${size.height} (${errorText(err)}); the agent can resize it (desktop resize)`,
        );
      },
    );
    await within(done, this.limits.restoreWaitMs);
  }

  private warn(sandbox: string, message: string): void {
    this.host.warn?.(sandbox, message);
  }
}

const TIMED_OUT = Symbol('timed out');

function within<T>(p: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

function errorText(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0]!.slice(0, 200);
}
