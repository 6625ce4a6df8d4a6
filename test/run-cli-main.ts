import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../src/cli/main.js';

/**
 * Runs the real `main` with its output captured and a throw-away SANDBOX_DESK_HOME, for unit tests of
 * what the CLI prints before any sandbox is touched (help, usage errors, completion).
 */
export async function runMain(argv: string[], home?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const own = home === undefined ? mkdtempSync(join(tmpdir(), 'sdesk-unit-')) : undefined;
  let stdout = '';
  let stderr = '';
  try {
    const code = await main(
      argv,
      { stdout: (s) => void (stdout += String(s)), stderr: (s) => void (stderr += String(s)) },
      () => {
        throw new Error('this test must not open the core');
      },
      { ...process.env, SANDBOX_DESK_HOME: home ?? own! },
    );
    return { code, stdout, stderr };
  } finally {
    if (own) rmSync(own, { recursive: true, force: true });
  }
}
