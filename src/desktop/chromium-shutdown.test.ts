import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CHROMIUM_STOP } from './chromium-shutdown.js';

/**
 * The stop script against a stand-in process group on this machine (no cdp.sock: the SIGTERM path):
 * a "browser" with --remote-debugging-pipe, a "renderer" with --type=, and the group's leader.
 */
describe('CHROMIUM_STOP', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  const group = (browserTrap: string) => {
    const dir = mkdtempSync(join(tmpdir(), 'sdesk-chromium-stop-'));
    dirs.push(dir);
    // exec -a gives each stand-in the argv shape the script looks for; each writes a file when it gets TERM.
    const leader = spawn(
      'setsid',
      [
        'bash',
        '-c',
        `(exec -a fake-browser bash -c '${browserTrap}; while :; do sleep 0.05; done' "$0" --remote-debugging-pipe about:blank) &
         (exec -a fake-renderer bash -c 'trap "touch $0/renderer-term" TERM; while :; do sleep 0.05; done' "$0" --type=renderer --remote-debugging-pipe) &
         echo $$ > "$0/leader"; wait`,
        dir,
      ],
      { stdio: 'ignore', detached: false },
    );
    return { dir, leader };
  };
  const waitFor = async (file: string) => {
    for (let i = 0; i < 100 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 20));
    // Both stand-ins up: their argv is in place.
    await new Promise((r) => setTimeout(r, 200));
  };

  it('SIGTERMs the browser process only, and waits until it is gone', async () => {
    const { dir, leader } = group('trap "touch $0/browser-term; exit 0" TERM');
    await waitFor(join(dir, 'leader'));
    const pgid = readFileSync(join(dir, 'leader'), 'utf8').trim();
    const r = spawnSync('bash', ['-c', CHROMIUM_STOP, 'sandbox-desk', pgid, '2', dir], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(existsSync(join(dir, 'browser-term'))).toBe(true);
    expect(existsSync(join(dir, 'renderer-term'))).toBe(false);
    process.kill(-Number(pgid), 'SIGKILL');
    leader.kill('SIGKILL');
  });

  it('exits 2 when the browser ignores SIGTERM for the whole grace', async () => {
    const { dir, leader } = group('trap "" TERM');
    await waitFor(join(dir, 'leader'));
    const pgid = readFileSync(join(dir, 'leader'), 'utf8').trim();
    const r = spawnSync('bash', ['-c', CHROMIUM_STOP, 'sandbox-desk', pgid, '1', dir], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    process.kill(-Number(pgid), 'SIGKILL');
    leader.kill('SIGKILL');
  });

  it('exits 0 at once when there is no browser in the group', () => {
    const r = spawnSync('bash', ['-c', CHROMIUM_STOP, 'sandbox-desk', '999999', '1', '/nonexistent'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
  });
});
