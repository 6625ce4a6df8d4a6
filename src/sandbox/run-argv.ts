import { spawn } from 'node:child_process';

export interface ArgvResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * How long the result waits for the output pipes to close once the process has exited. Normally they
 * close at once; they stay open when another process holds them — an ssh client's descriptors are
 * handed to its ControlMaster, which keeps writing to them until the remote command ends (measured:
 * a killed client of a paused VM held a probe for 60 s, until the master's keepalive gave up), or a
 * child left running in the background. Then the result is what was read by then.
 */
const PIPE_GRACE_MS = 2_000;
/** After our own kill the output is cut off anyway: wait only for what is already in the pipe. */
const KILLED_PIPE_GRACE_MS = 200;

/** Runs a short local argv (no shell) and collects its output. For probes, not for user commands. */
export function runArgv(argv: string[], opts: { timeoutMs?: number; input?: string } = {}): Promise<ArgvResult> {
  return new Promise((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
    // Whole chunks, decoded once: a UTF-8 character split across two chunks stays whole.
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const text = (b: Buffer[]): string => Buffer.concat(b).toString('utf8');
    let killed = false;
    let graceTimer: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, opts.timeoutMs ?? 30_000);
    const result = (code: number | null): ArgvResult => ({ code, stdout: text(out), stderr: text(err) });
    const finish = (r: ArgvResult): void => {
      clearTimeout(timer);
      clearTimeout(graceTimer);
      child.stdout.destroy();
      child.stderr.destroy();
      resolve(r);
    };
    let readSinceExit = false;
    child.stdout.on('data', (c: Buffer) => ((readSinceExit = true), out.push(c)));
    child.stderr.on('data', (c: Buffer) => ((readSinceExit = true), err.push(c)));
    child.on('error', (e) => finish({ ...result(null), stderr: text(err) + e.message }));
    child.on('exit', (code) => {
      // The check runs after an I/O poll (setImmediate): on a loop that was blocked past the grace, the
      // timer fires before the pipe's pending bytes are read; output still coming in waits another grace.
      const arm = (): void => {
        readSinceExit = false;
        graceTimer = setTimeout(
          () => setImmediate(() => (readSinceExit && !killed ? arm() : finish(result(code)))),
          killed ? KILLED_PIPE_GRACE_MS : PIPE_GRACE_MS,
        );
      };
      arm();
    });
    child.on('close', (code) => finish(result(code)));
    // A probe that exits before reading its stdin must not turn into an EPIPE crash.
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.input ?? '');
  });
}
