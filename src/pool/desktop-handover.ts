import { SandboxDeskError } from '../shared/errors.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { desktopLayout, REKEY_SCRIPT, rekeyFailed } from '../desktop/desktop-runtime.js';
import type { PoolEngine } from './pool-engine.js';
import { runIn } from '../exec/run-in.js';

/*
 * A running desktop's folder inside the sandbox is named after the sandbox (desktop-runtime.ts:
 * `<tmp>/sandbox-desk-desktop-<name>`). A claimed sandbox changes its name, so the folder moves with
 * it: renamed (Xvnc's and Chromium's sockets move with their folder), and the old name left as a link
 * to the new one, because the desktop's own processes (Xfce starting an app with XAUTHORITY in its
 * environment) still know the old path. Idempotent: a folder already moved is left alone. Run at the
 * claim, before anyone else has the sandbox, through the engine's API (a `docker exec` CLI process
 * alone cost the claimer hundreds of milliseconds on a busy machine).
 */
const SCRIPT = `old=$1 new=$2
if [ -d "$old" ] && [ ! -L "$old" ] && [ ! -e "$new" ]; then mv -- "$old" "$new" && ln -s -- "$new" "$old" || exit 1; fi
[ -d "$new" ]`;

export async function moveDesktopDir(
  engine: PoolEngine,
  containerId: string,
  env: SandboxEnvironment,
  from: string,
  to: string,
): Promise<void> {
  const { oldDir, newDir } = folders(env, from, to);
  let why: string;
  try {
    const r = await engine.run(containerId, ['sh', '-c', SCRIPT, 'sh', oldDir, newDir], { user: 'root', timeoutMs: 15_000 });
    if (r.code === 0) return;
    why = `exit ${r.code}${r.output.trim() ? `: ${r.output.trim()}` : ''}`;
  } catch (err) {
    why = err instanceof Error ? err.message : String(err);
  }
  throw folderNotMoved(oldDir, newDir, why);
}

/** The desktop's folder under the sandbox's old and new names (the display number is not part of it; 0 stands in). */
function folders(env: SandboxEnvironment, from: string, to: string): { oldDir: string; newDir: string } {
  return { oldDir: desktopLayout(env, from, 0).dir, newDir: desktopLayout(env, to, 0).dir };
}

function folderNotMoved(oldDir: string, newDir: string, why: string): SandboxDeskError {
  return new SandboxDeskError(
    'backend_unavailable',
    `the desktop's folder could not follow the sandbox's new name (${oldDir} → ${newDir})${why ? `: ${why}` : ''}`,
  );
}

/** What runs the hand-over in the sandbox (a VM's exec as the desktop's account; a fake in tests): its exit code and both outputs. */
export type SandboxRun = (argv: string[]) => Promise<{ code: number | null; output: string }>;

/** A SandboxRun through the sandbox's exec prefix (a VM has no engine API). */
export function execRun(env: SandboxEnvironment, opts: { user?: string; timeoutMs: number }): SandboxRun {
  return async (argv) => {
    const r = await runIn(env, argv, opts);
    return { code: r.code, output: `${r.stdout.toString('utf8')}${r.stderr}` };
  };
}

/*
 * A VM restored from a desktop template (src/sandbox/qemu/vm-template-desktop.ts): its desktop's folder
 * moved to the copy's name (SCRIPT) and its X cookie made the copy's own (REKEY_SCRIPT) in ONE guest
 * command, as the account the desktop runs as (the folder's owner: it may rename its own folder in the
 * sticky tmp dir) — each guest command of a VM under TCG costs seconds (an SSH session, sudo, a
 * shell), and this is on the create's path; both scripts run in subshells of this one bash, not
 * programs of their own (no sh, stat, runuser or second bash). Checks the RFB socket is there (the
 * first screen stream opens without a probe). The template froze the desktop's processes but Xvnc
 * (freezeDesktop): they are let go on the way out, whatever happened. Exit 3: the move failed, no
 * socket, or the folder is not this account's; 4-6: the re-key's own (desktop-runtime.ts). Prints
 * the new cookie's hash.
 */
const HANDOVER = `old=$1 new=$2 disp=$3 move=$4 rekey=$5
pg=
read -r pg 2>/dev/null <"$old/launcher.pid" || read -r pg 2>/dev/null <"$new/launcher.pid"
[[ $pg =~ ^[0-9]+$ ]] && trap 'kill -CONT -- "-$pg" 2>/dev/null' EXIT
(set -- "$old" "$new" && eval "$move") || { echo "the folder did not move"; exit 3; }
[ -S "$new/rfb.sock" ] || { echo "no RFB socket in $new"; exit 3; }
[ -O "$new" ] || { echo "$new is not $(id -un)'s"; exit 3; }
(set -- "$new" "$disp" && eval "$rekey")`;

/** Hands a template's running desktop to a copy named `to` (see HANDOVER); the new cookie's hash (sha256, 16 hex). */
export async function handOverRestoredDesktop(
  run: SandboxRun,
  env: SandboxEnvironment,
  from: string,
  to: string,
  display: number,
): Promise<string> {
  const { oldDir, newDir } = folders(env, from, to);
  const r = await run(['bash', '-c', HANDOVER, 'sandbox-desk', oldDir, newDir, String(display), SCRIPT, REKEY_SCRIPT]);
  const said = r.output.trim();
  if (r.code === 0) return said.split('\n')[0]!;
  if (r.code === 3) throw folderNotMoved(oldDir, newDir, said);
  throw rekeyFailed(r.code, said);
}
