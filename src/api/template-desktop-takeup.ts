/**
 * The create's hand-over of a desktop a VM was restored with from a desktop template
 * (src/sandbox/qemu/vm-template-desktop.ts), cut out of SandboxDesk so its failure path is tested
 * with fakes at the boundary (the guest command, the desktop's stop, the provider's note).
 */
import { desktopLayout, stopDesktopProcess } from '../desktop/desktop-runtime.js';
import { handOverRestoredDesktop, type SandboxRun } from '../pool/desktop-handover.js';
import type { ProgressEvent, SandboxEnvironment } from '../sandbox/provider.js';
import type { DesktopStream } from '../desktop/desktop-stream.js';
import type { TemplateDesktop } from '../sandbox/qemu/vm-template-desktop.js';

export interface TakeUpDeps {
  /** Runs a command in the VM as the account the desktop runs as (TemplateDesktop.user; null: the sandbox user). */
  runAsDesktop: SandboxRun;
  /**
   * Opens the first screen stream to the desktop's RFB socket at its new path while the hand-over runs
   * (its SSH channel, sudo and relay start are seconds under TCG); given to restoredRunning.
   */
  openAhead?: (socket: string, user: string | undefined) => DesktopStream;
  /** The desktop service takes the running desktop up (DesktopService.restoredRunning). */
  restoredRunning(user: string | undefined, ahead?: DesktopStream): void;
  /** The provider records how it went (QemuProvider.noteDesktopTaken: `inspect` says it). */
  noteTaken(taken: { ok: true; cookie: string } | { ok: false; reason: string }): void;
  /** Stops a desktop by its folder (stopDesktopProcess). */
  stop?: (env: SandboxEnvironment, dir: ReturnType<typeof desktopLayout>, user: string | undefined) => Promise<void>;
  say(e: ProgressEvent): void;
}

/**
 * Its folder renamed after the copy and its X cookie made the copy's own, in one guest command
 * (handOverRestoredDesktop), then taken up with the account it runs as. Not fatal: a desktop that
 * cannot be taken up is stopped (under either folder name: the move may or may not have happened;
 * a later `desktop start` starts a fresh one), and the create says so. True when it was taken up.
 */
export async function takeUpTemplateDesktop(env: SandboxEnvironment, d: TemplateDesktop, name: string, deps: TakeUpDeps): Promise<boolean> {
  const user = d.user ?? undefined;
  const t0 = Date.now();
  const ahead = deps.openAhead?.(desktopLayout(env, name, d.display).socket, user);
  try {
    const cookie = await handOverRestoredDesktop(deps.runAsDesktop, env, d.sandbox, name, d.display);
    deps.restoredRunning(user, ahead);
    deps.noteTaken({ ok: true, cookie });
    const took = ((Date.now() - t0) / 1000).toFixed(1);
    deps.say({
      step: 'desktop',
      message: `the desktop runs since the template (${d.geometry}): handed over in ${took} s, no desktop start`,
    });
    return true;
  } catch (err) {
    ahead?.kill();
    const reason = `the template's desktop could not be handed over (${err instanceof Error ? err.message : String(err)}); it is stopped: start one with \`sandbox-desk desktop start ${name}\``;
    deps.noteTaken({ ok: false, reason });
    deps.say({ step: 'desktop', level: 'warning', message: reason });
    const stop = deps.stop ?? stopDesktopProcess;
    for (const folder of [d.sandbox, name]) await stop(env, desktopLayout(env, folder, d.display), user).catch(() => undefined);
    return false;
  }
}
