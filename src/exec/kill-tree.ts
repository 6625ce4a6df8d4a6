import { spawn } from 'node:child_process';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { remoteArgv } from './remote-argv.js';
import { KILL_TREE_SCRIPT } from './wrapper-script.js';

/**
 * How long the kill's own exec may take before it is given up. Generous: into a VM under TCG on a
 * loaded machine, the second exec's SSH connection alone can take over 5 s (the old bound), and a kill
 * given up leaves the command running — "a killed command changes nothing" then held only for its cwd.
 */
export const KILL_TREE_BOUND_MS = 20_000;

/**
 * Ends a process tree *inside* the sandbox through a second exec. Killing the local `docker exec`
 * client alone would leave the command running in the container.
 */
export async function killTree(
  env: SandboxEnvironment,
  user: string | undefined,
  pid: number,
  opts: { includeRoot: boolean; timeoutMs?: number },
): Promise<void> {
  if (!Number.isInteger(pid) || pid <= 1) return;
  const argv = remoteArgv(env, { user, interactive: false }, [
    'bash',
    '-c',
    KILL_TREE_SCRIPT,
    'sandbox-desk',
    String(pid),
    opts.includeRoot ? '1' : '0',
  ]);
  await new Promise<void>((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: 'ignore' });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? KILL_TREE_BOUND_MS);
    child.on('error', () => resolve());
    child.on('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
