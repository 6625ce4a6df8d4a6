import type { ExecWarning } from '../shared/exec-result.js';
import type { ProgressEvent } from '../sandbox/provider.js';
import type { HeldTerminal } from '../session/terminal-registry.js';

/*
 * What a restore or a fork brings back. A restore replaces the sandbox; the person was looking at what
 * ran in it, so what ran RIGHT BEFORE the restore runs again after it, in the restored sandbox:
 *  - the desktop, when it was running (same size, same display grant) — not "when it ran at checkpoint
 *    time": a disk-only checkpoint holds no processes, and the app does not record the desktop's state
 *    in it; a desktop stopped on purpose stays stopped, one in use is not taken away by a restore;
 *  - each session's persistent shell that was up, opened again at the session's restored cwd;
 *  - the open terminals, reopened under the same ids (a window attached to one reattaches to it).
 * A fork does the same in each new sandbox from its source's state at fork time, except terminals: the
 * source keeps its own, and a fork's terminal opens when someone opens one there.
 * Something that does not come back is a `not_restarted` warning, never a failed restore.
 */

/** What ran before, as far as the restart is concerned. */
export interface RunningBefore {
  /** The desktop, when it was running: started again with the same geometry and grant. */
  desktop: { geometry: string | null; grantShellDisplay: boolean } | null;
  /** Sessions whose persistent shell was up. */
  shells: string[];
  /** Terminals kept by id across the restore (always empty for a fork). */
  terminals: HeldTerminal[];
}

/** What the restarts need from the core (the facade provides it; unit tests fake it). */
export interface RestartHost {
  desktopStatus(sandbox: string): Promise<{ running: boolean; geometry: string | null; shellDisplayGranted: boolean }>;
  startDesktop(
    sandbox: string,
    opts: { geometry?: string; grantShellDisplay?: boolean },
  ): Promise<{ running: boolean; reason: string | null }>;
  /** Sessions of the sandbox whose persistent shell is up now. */
  liveShells(sandbox: string): string[];
  /** Runs a no-op in the session's persistent shell (opening it at the session's cwd); its warnings. */
  openShell(sandbox: string, session: string): Promise<ExecWarning[]>;
  holdTerminals(sandbox: string): HeldTerminal[];
  reopenTerminals(held: HeldTerminal[]): Promise<{ reopened: string[]; failed: Array<{ terminalId: string; error: string }> }>;
  releaseTerminals(held: HeldTerminal[]): void;
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Reads what runs in `sandbox` now. With `holdTerminals` (a restore), its terminals are also kept by
 * id from here on: call `restartWhatRan` or `giveUp` afterwards. A desktop whose state cannot be read
 * (the sandbox is stopped, the engine slow) counts as not running: nothing is started on a guess.
 */
export async function captureRunning(host: RestartHost, sandbox: string, opts: { holdTerminals: boolean }): Promise<RunningBefore> {
  let desktop: RunningBefore['desktop'] = null;
  try {
    const s = await host.desktopStatus(sandbox);
    if (s.running) desktop = { geometry: s.geometry, grantShellDisplay: s.shellDisplayGranted };
  } catch {
    desktop = null;
  }
  return { desktop, shells: host.liveShells(sandbox), terminals: opts.holdTerminals ? host.holdTerminals(sandbox) : [] };
}

/** The restore failed before anything could come back: held terminals are given up (their viewers read them as gone). */
export function giveUp(host: RestartHost, before: RunningBefore): void {
  host.releaseTerminals(before.terminals);
}

/**
 * Starts again in `target` what ran before: the shells of `sessions` that had one (sessions the
 * restored sandbox no longer has are not revived), the desktop, the terminals. Each step is reported
 * through `progress`; what fails is a `not_restarted` warning (and a `not-restarted` step) and the
 * rest still comes back.
 */
export async function restartWhatRan(
  host: RestartHost,
  target: string,
  before: RunningBefore,
  sessions: readonly string[],
  progress: ((e: ProgressEvent) => void) | undefined,
): Promise<ExecWarning[]> {
  const warnings: ExecWarning[] = [];
  const missed = (what: string, err: unknown): void => {
    const message = `${target}: ${what} did not come back: ${errText(err)}`;
    warnings.push({ code: 'not_restarted', message });
    // Said as a step, not a `warning` step: the operation would turn that into a second (backend_warning) warning.
    progress?.({ step: 'not-restarted', message });
  };
  const known = new Set(sessions);
  const shells = before.shells.filter((s) => known.has(s));
  if (shells.length) {
    progress?.({ step: 'shells', message: `opening the session shell${shells.length === 1 ? '' : 's'} of ${shells.join(', ')}` });
    await Promise.all(
      shells.map(async (s) => {
        try {
          warnings.push(...(await host.openShell(target, s)));
        } catch (err) {
          missed(`the shell of session ${JSON.stringify(s)}`, err);
        }
      }),
    );
  }
  if (before.desktop) {
    progress?.({ step: 'desktop', message: 'starting the desktop again (it was running)' });
    try {
      const s = await host.startDesktop(target, {
        ...(before.desktop.geometry ? { geometry: before.desktop.geometry } : {}),
        ...(before.desktop.grantShellDisplay ? { grantShellDisplay: true } : {}),
      });
      if (!s.running) missed('the desktop', new Error(s.reason ?? 'it is not running after its start'));
    } catch (err) {
      missed('the desktop', err);
    }
  }
  if (before.terminals.length) {
    const n = before.terminals.length;
    progress?.({ step: 'terminals', message: `reopening ${n} terminal${n === 1 ? '' : 's'}` });
    try {
      const r = await host.reopenTerminals(before.terminals);
      for (const f of r.failed) missed(`terminal ${f.terminalId}`, new Error(f.error));
    } catch (err) {
      host.releaseTerminals(before.terminals);
      missed('the terminals', err);
    }
  }
  return warnings;
}
