import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { SandboxDeskError } from '../../shared/errors.js';
import type { IDisposable } from '../../shared/lifecycle.js';

/**
 * Reads the X pointer where RFB cannot: the protocol has no "where is the pointer" question, so one
 * long-lived shell inside the sandbox (started once per live connection, as the desktop's account)
 * runs `xdotool getmouselocation` per request line. That costs a fork in the sandbox, not a
 * `docker exec` per action.
 */
const LOOP = 'while IFS= read -r _; do xdotool getmouselocation --shell 2>&1 | tr "\\n" " "; echo; done';

/** The words to run inside the sandbox (after the exec prefix): the probe's shell. */
export function pointerProbeWords(displayEnv: string[]): string[] {
  return ['env', ...displayEnv, 'bash', '-c', LOOP];
}

interface Pending {
  resolve: (p: { x: number; y: number }) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

export class PointerProbe implements IDisposable {
  private child: ChildProcessWithoutNullStreams | undefined;
  private buffered = '';
  private readonly pending: Pending[] = [];

  /** `argv`: the whole command (exec prefix + pointerProbeWords). */
  constructor(private readonly argv: string[]) {}

  private start(): ChildProcessWithoutNullStreams {
    const child = spawn(this.argv[0]!, this.argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin.on('error', () => undefined);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (s: string) => {
      this.buffered += s;
      for (let nl = this.buffered.indexOf('\n'); nl >= 0; nl = this.buffered.indexOf('\n')) {
        const line = this.buffered.slice(0, nl);
        this.buffered = this.buffered.slice(nl + 1);
        this.answer(line);
      }
    });
    const gone = (why: string): void => {
      if (this.child === child) this.child = undefined;
      this.buffered = '';
      for (const p of this.pending.splice(0)) {
        clearTimeout(p.timer);
        p.reject(new SandboxDeskError('backend_unavailable', `could not read the pointer position: ${why}`));
      }
    };
    child.on('error', (e) => gone(e.message));
    child.on('close', (code) => gone(`the probe exited (${code})`));
    return child;
  }

  private answer(line: string): void {
    const p = this.pending.shift();
    if (!p) return;
    clearTimeout(p.timer);
    const x = /X=(\d+)/.exec(line)?.[1];
    const y = /Y=(\d+)/.exec(line)?.[1];
    if (x === undefined || y === undefined) p.reject(new SandboxDeskError('backend_unavailable', `xdotool getmouselocation said: ${line.trim() || 'nothing'}`));
    else p.resolve({ x: Number(x), y: Number(y) });
  }

  measure(timeoutMs = 5000): Promise<{ x: number; y: number }> {
    this.child ??= this.start();
    const child = this.child;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        // Answers come in order: after a lost one the stream cannot be trusted, so start over.
        child.kill();
        reject(new SandboxDeskError('backend_unavailable', `the pointer position did not come within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.push({ resolve, reject, timer });
      child.stdin.write('\n');
    });
  }

  dispose(): void {
    this.child?.kill();
    this.child = undefined;
  }
}
