import { spawn, execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A desktop's process group faked on this machine for the template's freeze and the hand-over's thaw:
 * a "launcher" (bash, leading its own group, as setsid makes the real one) with children named Xvnc and
 * xfwm4 (copies of sleep). `state(name)` is the process's state letter (T: stopped).
 */
export async function fakeDesktopGroup(bin: string): Promise<{ pgid: number; state(name: string): string; kill(): void }> {
  mkdirSync(bin, { recursive: true });
  for (const p of ['Xvnc', 'xfwm4']) {
    copyFileSync('/bin/sleep', join(bin, p));
    chmodSync(join(bin, p), 0o755);
  }
  const launcher = spawn('bash', ['-c', `"${bin}/Xvnc" 60 & "${bin}/xfwm4" 60 & wait`], { detached: true, stdio: 'ignore' });
  const pgid = launcher.pid!;
  const pidOf = (name: string): number =>
    Number(
      execFileSync('pgrep', ['-g', String(pgid), '-x', name])
        .toString()
        .trim()
        .split('\n')[0],
    );
  for (let i = 0; i < 100; i++) {
    try {
      pidOf('Xvnc');
      pidOf('xfwm4');
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  const stateOf = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '')[0]!;
  return {
    pgid,
    state: (name) => stateOf(name === 'launcher' ? pgid : pidOf(name)),
    kill: () => {
      try {
        process.kill(-pgid, 'SIGKILL');
      } catch {
        // gone already
      }
    },
  };
}
