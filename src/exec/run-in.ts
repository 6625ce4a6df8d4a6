import { spawn } from 'node:child_process';
import { SandboxDeskError } from '../shared/errors.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { remoteArgv } from './remote-argv.js';

export interface RunInResult {
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

/**
 * Runs one short, app-owned argv inside the sandbox through its exec prefix and captures the result —
 * for probes and housekeeping (desktop start/stop/status, file copies), not for user commands, which
 * go through run-command with the whole cwd policy.
 */
export function runIn(
  env: SandboxEnvironment,
  words: string[],
  opts: { user?: string | undefined; input?: Buffer | string; timeoutMs?: number } = {},
): Promise<RunInResult> {
  const argv = remoteArgv(env, { user: opts.user, interactive: false }, words);
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    // Decoded once at the end: a UTF-8 character split across chunks stays whole.
    const err: Buffer[] = [];
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.stdin.on('error', () => undefined);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new SandboxDeskError('backend_unavailable', `could not run ${argv[0]}: ${e.message}`));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString('utf8') });
    });
    child.stdin.end(opts.input ?? '');
  });
}
