import { SandboxDeskError } from '../shared/errors.js';
import { runArgv } from './run-argv.js';
import { argvAfterPrefix } from './shell-quote.js';

// Physical path when the home can be entered; otherwise $HOME as the user sees it — the cwd walk will
// then fall back from it with a warning, instead of the sandbox failing to connect.
export const HOME_SCRIPT = 'cd ~ 2>/dev/null && pwd -P || printf "%s\\n" "$HOME"';

/**
 * Measures the sandbox user's real home by entering it: `cd ~ && pwd -P` run through the exec prefix.
 * Measured, never inferred from the user name (root's home is /root, agent's /home/agent, a VM user's
 * whatever its passwd entry says).
 */
export async function measureHome(prefix: string[], joinsArgv = false): Promise<string> {
  const argv = [...prefix, ...argvAfterPrefix(['bash', '-c', HOME_SCRIPT], joinsArgv)];
  const r = await runArgv(argv, { timeoutMs: 30_000 });
  return homeFrom(r.code, r.stdout, r.stderr);
}

/** The home HOME_SCRIPT printed, or why there is none. */
export function homeFrom(code: number | null, stdout: string, stderr: string): string {
  const home = stdout.trim();
  if (code !== 0 || !home.startsWith('/')) {
    throw new SandboxDeskError(
      'backend_unavailable',
      `could not measure the sandbox user's home (exit ${code}): ${(stderr || stdout).trim() || 'no output'}`,
      {
        hint: 'check that the sandbox has bash and that its user has a home directory',
      },
    );
  }
  return home;
}
