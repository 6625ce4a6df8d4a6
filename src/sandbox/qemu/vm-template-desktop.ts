/**
 * The desktop in a VM template (issue 37: "a desktop VM's first frame ≥ 10× faster from a template
 * than cold"): at the build the bot desktop is started in the VM and checked really up — its readiness
 * file, every Xfce piece alive, and a real frame from its VNC server — so the saved memory holds a
 * running, ready desktop, frozen but Xvnc (freezeDesktop in src/desktop/desktop-runtime.ts: a copy under
 * TCG would otherwise spend its first seconds re-translating Chromium's and Xfce's code, its SSH, identity
 * and hand-over waiting). A VM created from the template hands that desktop to the desktop service
 * (the warm pool's hand-over: its folder renamed after the sandbox, the account it runs as carried
 * over) instead of starting one: its first frame needs no desktop start.
 *
 * A copy's secrets: the app's viewer tickets, the DevTools bridge's path and the inbox tokens are made
 * on the host per stream, never in the guest, so no copy shares them. The one in the guest is the X
 * cookie the launcher made at the build (in Xauthority and in Xvnc's memory): each copy gets its own
 * (REKEY_SCRIPT, in the hand-over's one guest command), and that is what every app-owned X client uses from then on. Xvnc keeps
 * accepting the template's first cookie too (X has no way to revoke its -auth cookie while it runs):
 * using it needs the guest's own X socket (no TCP listener), and a VM's sandbox user can already reach
 * the display (password-less sudo: status says `displayIsolation: shared`).
 */
import type { SandboxEnvironment } from '../provider.js';

/** template.json's `desktop`: the desktop running in the saved memory, and how it was started. */
export interface TemplateDesktop {
  /** The build VM's name: the desktop's folder in the guest is named after it until a copy renames it. */
  sandbox: string;
  /** The account it runs as (null: the sandbox user, a shared desktop). */
  user: string | null;
  /** How it runs (desktop-runtime.ts's DesktopMode): a template's is isolated or shared. */
  mode: 'isolated' | 'shared' | 'granted';
  display: number;
  geometry: string;
  /** The first frame the build read from it, WIDTHxHEIGHT. */
  frame: string;
}

/**
 * Starts the desktop in a template's build VM and checks it is up (src/desktop/template-desktop.ts:
 * the desktop's own code, given to the provider by the app — this layer does not reach the desktop).
 */
export type TemplateDesktopStarter = (
  env: SandboxEnvironment,
  sandbox: string,
  geometry: string,
  say: (message: string) => void,
) => Promise<TemplateDesktop>;
