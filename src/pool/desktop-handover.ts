import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { SandboxDeskError } from '../shared/errors.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { desktopLayout } from '../desktop/desktop-runtime.js';

const run = promisify(execFile);

/*
 * A running desktop's folder inside the sandbox is named after the sandbox (desktop-runtime.ts). A
 * claimed sandbox changes its name, so the folder moves with it: renamed (Xvnc's and Chromium's sockets
 * move with their folder), and the old name left as a link to the new one, because the desktop's own
 * processes (Xfce starting an app with XAUTHORITY in its environment) still know the old path.
 * Idempotent: a folder already moved is left alone. Run at the claim, before anyone else has the sandbox.
 */
const SCRIPT = `old=$1 new=$2
if [ -d "$old" ] && [ ! -L "$old" ] && [ ! -e "$new" ]; then mv -- "$old" "$new" && ln -s -- "$new" "$old" || exit 1; fi
[ -d "$new" ]`;

export async function moveDesktopDir(env: SandboxEnvironment, from: string, to: string): Promise<void> {
  const prefix = env.execPrefix({ user: 'root', interactive: false });
  if (!prefix) throw new SandboxDeskError('backend_unavailable', 'the sandbox cannot run commands: its desktop cannot be handed over');
  // The display number is not part of the folder's name; 0 stands in.
  const oldDir = desktopLayout(env, from, 0).dir;
  const newDir = desktopLayout(env, to, 0).dir;
  try {
    await run(prefix[0]!, [...prefix.slice(1), 'sh', '-c', SCRIPT, 'sh', oldDir, newDir], { timeout: 15_000 });
  } catch (err) {
    throw new SandboxDeskError(
      'backend_unavailable',
      `the pooled desktop's folder could not follow the sandbox's new name (${oldDir} → ${newDir})`,
      {
        cause: err,
      },
    );
  }
}
