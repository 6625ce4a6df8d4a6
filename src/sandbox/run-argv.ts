import { spawn } from 'node:child_process';

export interface ArgvResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a short local argv (no shell) and collects its output. For probes, not for user commands. */
export function runArgv(argv: string[], opts: { timeoutMs?: number; input?: string } = {}): Promise<ArgvResult> {
  return new Promise((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
    // Whole chunks, decoded once: a UTF-8 character split across two chunks stays whole.
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const text = (b: Buffer[]): string => Buffer.concat(b).toString('utf8');
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve({ code: null, stdout: text(out), stderr: text(err) + e.message });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: text(out), stderr: text(err) });
    });
    // A probe that exits before reading its stdin must not turn into an EPIPE crash.
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.input ?? '');
  });
}
