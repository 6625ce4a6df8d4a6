import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resourcePath } from '../platform/project-root.js';

/**
 * launcher.sh's `keep_running`, cut out of the launcher and run on a fake Xfce piece: a piece that dies
 * (xfsettingsd's SIGTRAP under TCG) is started again, a bounded number of times, each restart said —
 * unless the X server is gone (xdpyinfo, made a fake here, does not answer): then it is left dead.
 */
const launcher = readFileSync(resourcePath('desktop', 'launcher.sh'), 'utf8');
const fn = /^keep_running\(\) \{\n[\s\S]*?\n\}\n/m.exec(launcher)?.[0];

describe("launcher.sh keep_running (the Xfce pieces' restarts)", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  /** Runs keep_running on a piece that fails `failures` times (exit 5), then exits 0; `display`: whether X answers. */
  const run = (failures: number, display = true) => {
    const dir = mkdtempSync(join(tmpdir(), 'sdesk-keep-'));
    dirs.push(dir);
    const piece = `n=$(cat "${dir}/n" 2>/dev/null || echo 0); echo $((n + 1)) > "${dir}/n"; [ "$n" -ge ${failures} ] && exit 0; exit 5`;
    // sleep is made instant: the real one waits a second between restarts; xdpyinfo says whether X answers.
    const fakes = `sleep() { :; }\nxdpyinfo() { echo "xdpyinfo $*" >> "${dir}/xdpyinfo"; return ${display ? 0 : 1}; }`;
    const r = spawnSync('bash', ['-c', `${fakes}\n${fn}\nkeep_running piece bash -c '${piece}'`], { encoding: 'utf8' });
    const probes = existsSync(join(dir, 'xdpyinfo')) ? readFileSync(join(dir, 'xdpyinfo'), 'utf8').trim().split('\n').length : 0;
    return { code: r.status, out: r.stdout, starts: Number(readFileSync(join(dir, 'n'), 'utf8')), probes };
  };

  it('is in the launcher, and every Xfce piece runs under it', () => {
    expect(fn).toBeDefined();
    for (const piece of ['xfsettingsd', 'xfwm4', 'xfdesktop', 'xfce4-panel']) expect(launcher).toContain(`keep_running ${piece} ${piece}`);
  });

  it('restarts a piece that died, and says so', () => {
    const r = run(2);
    expect(r.starts).toBe(3);
    expect(r.code).toBe(0);
    expect(r.out).toBe('sandbox-desk: piece exited (5); restart 1 of 5\nsandbox-desk: piece exited (5); restart 2 of 5\n');
    // The display was asked before each restart.
    expect(r.probes).toBe(2);
  });

  it('does not restart a piece when the X server is gone (Xvnc died): one line, the exit code, no loop', () => {
    const r = run(100, false);
    expect(r.starts).toBe(1);
    expect(r.probes).toBe(1);
    expect(r.code).toBe(5);
    expect(r.out).toBe('sandbox-desk: piece exited (5); the display is gone, not restarted\n');
  });

  it('gives up after 5 restarts, saying so, with the last exit code', () => {
    const r = run(100);
    expect(r.starts).toBe(6);
    expect(r.code).toBe(5);
    expect(r.out.trim().split('\n').at(-1)).toBe('sandbox-desk: piece exited (5); not restarted again after 5 restarts');
  });

  it('leaves a piece that exited 0 (told to quit) alone', () => {
    const r = run(0);
    expect(r.starts).toBe(1);
    expect(r.out).toBe('');
    expect(r.probes).toBe(0);
  });
});
