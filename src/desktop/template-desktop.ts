/**
 * The desktop of a VM template (src/sandbox/qemu/vm-template-desktop.ts says what it is for and what a
 * copy shares): started in the build VM and checked really up before the memory is saved.
 */
import { SandboxDeskError } from '../shared/errors.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import type { TemplateDesktop } from '../sandbox/qemu/vm-template-desktop.js';
import {
  DISPLAY_USER,
  SANDBOX_DISPLAY,
  desktopLayout,
  desktopPiecesProblem,
  freezeDesktop,
  probeDesktop,
  startDesktopProcess,
  type DesktopMode,
} from './desktop-runtime.js';
import { DesktopStreams } from './desktop-stream.js';
import { RfbClient, transportFromStreams } from './rfb/rfb-client.js';

/** Under TCG a start and each check is slow; the build fails after these, saying what was missing. */
const START_LIMIT_S = 300;
const PIECES_LIMIT_S = 180;
const FRAME_MS = 120_000;

export interface DesktopCheckDeps {
  start: typeof startDesktopProcess;
  probe: typeof probeDesktop;
  pieces: typeof desktopPiecesProblem;
  /** The last step: all but Xvnc stopped until a copy's hand-over (freezeDesktop). */
  freeze: typeof freezeDesktop;
  /** The first frame's size from the desktop's RFB socket, as `user`. */
  frame(env: SandboxEnvironment, socket: string, user: string | undefined): Promise<{ width: number; height: number }>;
}

export const realDesktopCheck: DesktopCheckDeps = {
  start: startDesktopProcess,
  probe: probeDesktop,
  pieces: desktopPiecesProblem,
  freeze: freezeDesktop,
  frame: firstFrame,
};

/**
 * Starts the desktop in the build VM and checks it is up: readiness, every Xfce piece, a real frame,
 * then the pieces again (under TCG one died just after the first frame); then freezes it but Xvnc
 * (freezeDesktop: a copy's hand-over lets it go). Throws, saying what is
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
  const settled = await deps.freeze(env, layout, user).catch((err: unknown) => fail((err as Error).message));
  say(
    `the desktop is up: Xfce running, a ${frame.width}x${frame.height} frame read from its VNC server; frozen but Xvnc until a copy takes it (the guest ${settled})`,
  );
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
