import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants } from 'node:os';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { CommandCapture, type RawRun, type RunRequest } from './command-capture.js';
import { FrameSplitter, type Frame } from './frame-splitter.js';
import { killTree } from './kill-tree.js';
import { remoteArgv } from './remote-argv.js';
import { encodeRequest, ONESHOT_SCRIPT } from './wrapper-script.js';

/** How long a killed command may take to wind down before its transport is cut. */
export const KILL_GRACE_MS = 3000;

export function newNonce(): string {
  return randomBytes(16).toString('hex');
}

export function exitStatusOf(code: number | null, signal: NodeJS.Signals | null): number | null {
  if (code !== null) return code;
  if (signal) return 128 + (constants.signals[signal] ?? 0);
  return null;
}

/**
 * Runs one command in a fresh `bash -c` through the environment's exec prefix. The request goes on
 * stdin, as in a session shell: in argv the nonce would be readable from /proc, and a long command
 * would hit the kernel's 128 KiB limit on one argument (E2BIG).
 */
export function runOneshot(env: SandboxEnvironment, user: string | undefined, req: RunRequest): Promise<RawRun> {
  const nonce = newNonce();
  const argv = remoteArgv(env, { user, interactive: false }, ['bash', '-c', ONESHOT_SCRIPT, 'sandbox-desk']);
  const cap = new CommandCapture(nonce, req.maxOutputBytes);
  // Set once a kill was asked for: a start frame arriving after it still gets its tree killed.
  let onStarted: (() => void) | null = null;
  const frame = (f: Frame): void => {
    cap.frame(f);
    if (cap.start) onStarted?.();
  };
  const out = new FrameSplitter(
    (c) => cap.stdoutPayload(c),
    frame,
    (why) => cap.broken(why),
  );
  const err = new FrameSplitter(
    (c) => cap.stderrPayload(c),
    frame,
    (why) => cap.broken(why),
  );
  out.expect(nonce);
  err.expect(nonce);

  return new Promise<RawRun>((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin.on('error', () => undefined);
    child.stdin.end(encodeRequest(nonce, req.target, req.tmpDir, req.command));
    let killed: RawRun['killed'] = null;
    let settled = false;
    const finish = (exit: number | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
      out.end();
      err.end();
      resolve(cap.result(exit, killed));
    };
    const kill = (why: 'timeout' | 'interrupt'): void => {
      if (killed || settled) return;
      killed = why;
      const cut = (): void => {
        if (!settled) child.kill('SIGKILL');
      };
      let treeKilled = false;
      const killStarted = (): void => {
        if (treeKilled || !cap.start) return;
        treeKilled = true;
        void killTree(env, user, cap.start.pid, { includeRoot: true }).then(() => setTimeout(cut, KILL_GRACE_MS).unref());
      };
      onStarted = killStarted;
      if (cap.start) killStarted();
      // Killed before its start frame arrived: the command may be starting inside the sandbox right
      // now, where cutting the local transport would not stop it. Its tree is killed as soon as the
      // frame says where it is; the transport is cut if the frame never comes.
      else setTimeout(() => cap.start || cut(), KILL_GRACE_MS).unref();
    };
    const onAbort = (): void => kill('interrupt');
    const timer = setTimeout(() => kill('timeout'), req.timeoutMs);
    if (req.signal?.aborted) queueMicrotask(onAbort);
    else req.signal?.addEventListener('abort', onAbort, { once: true });

    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', (e) => {
      cap.transportNote += `could not run ${argv[0]}: ${e.message}`;
      finish(null);
    });
    child.on('close', (code, signal) => finish(exitStatusOf(code, signal)));
  });
}
