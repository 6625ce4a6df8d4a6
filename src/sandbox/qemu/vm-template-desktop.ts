/**
 * The desktop in a VM template (issue 37: "a desktop VM's first frame ≥ 10× faster from a template
 * than cold"): at the build the bot desktop is started in the VM and checked really up — its readiness
 * file, every Xfce piece alive, and a real frame from its VNC server — so the saved memory holds a
 * running, ready desktop. A VM created from the template hands that desktop to the desktop service
 * (the warm pool's hand-over: its folder renamed after the sandbox, the account it runs as carried
 * over) instead of starting one: its first frame needs no desktop start.
 *
 * A copy's secrets: the app's viewer tickets, the DevTools bridge's path and the inbox tokens are made
 * on the host per stream, never in the guest, so no copy shares them. The one in the guest is the X
 * cookie the launcher made at the build (in Xauthority and in Xvnc's memory): each copy gets its own
 * (rekeyDisplayCookie), and that is what every app-owned X client uses from then on. Xvnc keeps
 * accepting the template's first cookie too (X has no way to revoke its -auth cookie while it runs):
 * using it needs the guest's own X socket (no TCP listener), and a VM's sandbox user can already reach
 * the display (password-less sudo: status says `displayIsolation: shared`).
 */
import { SandboxDeskError } from '../../shared/errors.js';
import type { SandboxEnvironment } from '../provider.js';
import {
  DISPLAY_USER,
  SANDBOX_DISPLAY,
  desktopLayout,
  desktopPiecesProblem,
  probeDesktop,
  startDesktopProcess,
  type DesktopMode,
} from '../../desktop/desktop-runtime.js';
import { DesktopStreams } from '../../desktop/desktop-stream.js';
import { RfbClient, transportFromStreams } from '../../desktop/rfb/rfb-client.js';

/** template.json's `desktop`: the desktop running in the saved memory, and how it was started. */
export interface TemplateDesktop {
  /** The build VM's name: the desktop's folder in the guest is named after it until a copy renames it. */
  sandbox: string;
  /** The account it runs as (null: the sandbox user, a shared desktop). */
  user: string | null;
  mode: DesktopMode;
  display: number;
  geometry: string;
  /** The first frame the build read from it, WIDTHxHEIGHT. */
  frame: string;
}

/** Under TCG a start and each check is slow; the build fails after these, saying what was missing. */
const START_LIMIT_S = 300;
const PIECES_LIMIT_S = 180;
const FRAME_MS = 120_000;

export interface DesktopCheckDeps {
  start: typeof startDesktopProcess;
  probe: typeof probeDesktop;
  pieces: typeof desktopPiecesProblem;
  /** The first frame's size from the desktop's RFB socket, as `user`. */
  frame(env: SandboxEnvironment, socket: string, user: string | undefined): Promise<{ width: number; height: number }>;
}

export const realDesktopCheck: DesktopCheckDeps = {
  start: startDesktopProcess,
  probe: probeDesktop,
  pieces: desktopPiecesProblem,
  frame: firstFrame,
};

/**
 * Starts the desktop in the build VM and checks it is up: readiness, every Xfce piece, a real frame,
 * then the pieces again (under TCG one died just after the first frame). Throws, saying what is
 * missing, rather than saving a template whose desktop is not whole.
 */
export async function startTemplateDesktop(
  env: SandboxEnvironment,
  sandbox: string,
  geometry: string,
  say: (message: string) => void,
  deps: DesktopCheckDeps = realDesktopCheck,
): Promise<TemplateDesktop> {
  const layout = desktopLayout(env, sandbox, SANDBOX_DISPLAY);
  // As DesktopService does: the display user where the guest has it (isolated), else the sandbox user.
  let user: string | undefined = DISPLAY_USER;
  const probe = await deps.probe(env, layout, DISPLAY_USER, 180_000).catch(() => null);
  if (!probe || probe.whoami !== DISPLAY_USER) user = undefined;
  const missing = probe?.missing.filter((b) => b !== 'chromium') ?? [];
  if (missing.length)
    throw new SandboxDeskError('image_invalid', `the VM has no desktop to put in the template: ${missing.join(', ')} missing`);
  const mode: DesktopMode = user ? 'isolated' : 'shared';
  say(`starting the desktop in the template VM (${mode}, ${geometry})`);
  const fail = (what: string): never => {
    throw new SandboxDeskError('backend_unavailable', `the template's desktop is not up: ${what}`, {
      hint: `its logs are in the build VM's ${layout.dir} (launcher.log, xvnc.log, xfce.log); the template was not saved`,
    });
  };
  await deps
    .start(env, layout, { geometry, mode, user, readyTimeoutS: START_LIMIT_S })
    .catch((err: unknown) => fail((err as Error).message));
  const before = await deps.pieces(env, layout, { user, limitS: PIECES_LIMIT_S });
  if (before) fail(before);
  let frame: { width: number; height: number };
  try {
    frame = await deps.frame(env, layout.socket, user);
  } catch (err) {
    return fail(`no frame from its VNC server: ${(err as Error).message}`);
  }
  if (!(frame.width > 0 && frame.height > 0)) fail(`its VNC server sent an empty frame (${frame.width}x${frame.height})`);
  const after = await deps.pieces(env, layout, { user, limitS: 5 });
  if (after) fail(`after the first frame: ${after}`);
  say(`the desktop is up: Xfce running, a ${frame.width}x${frame.height} frame read from its VNC server`);
  return { sandbox, user: user ?? null, mode, display: SANDBOX_DISPLAY, geometry, frame: `${frame.width}x${frame.height}` };
}

/** One full framebuffer update over a screen stream, as the app's viewers get it. */
async function firstFrame(env: SandboxEnvironment, socket: string, user: string | undefined): Promise<{ width: number; height: number }> {
  const streams = new DesktopStreams();
  const stream = await streams.open(env, socket, user);
  const timer = setTimeout(() => stream.kill(), FRAME_MS);
  try {
    const rfb = await RfbClient.connect(
      transportFromStreams(stream.stdout, stream.stdin, () => stream.kill()),
      { timeoutMs: FRAME_MS },
    );
    try {
      await rfb.requestUpdate(false, FRAME_MS);
      return { width: rfb.width, height: rfb.height };
    } finally {
      rfb.close();
    }
  } finally {
    clearTimeout(timer);
    stream.kill();
    streams.dispose();
  }
}
