/**
 * `sandbox-desk cp` against a hostile sandbox (issue 35, the host's files): a real Docker sandbox in
 * which the agent (root there) names folders with newlines, reaches them through symlinks, and replaces
 * `cat` so that a file shrinks after its size was announced or stalls mid-transfer. The real CLI, in its
 * own process, copies out of (and into) it. Nothing may land outside the target folder on this machine,
 * the local name is the one asked for, the bytes reported are the bytes written, a short transfer is an
 * error that keeps an existing target, and no part file outlives its download.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDesk, uniqueName, type TestDesk } from '../integration/helpers.js';

const execFileP = promisify(execFile);
const BIN = resolve(import.meta.dirname, '../../bin/sandbox-desk.js');

/** Every entry under `dir`, dot files included, as paths relative to it. */
function tree(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((p) => relative(dir, join(dir, p)))
    .sort();
}

/** The agent's `cat`: shrinks `*shrinks*` files once 1 MiB of them was sent, stalls `*slow*` ones after 64 KiB. */
const HOSTILE_CAT = `#!/bin/sh
case "$2" in
  *shrinks*) { head -c 1048576; truncate -s 1048576 -- "$2"; /usr/bin/cat; } < "$2"; exit 0 ;;
  *slow*) head -c 65536 -- "$2"; exec sleep 30 ;;
esac
exec /usr/bin/cat "$@"
`;

describe('cp download from a hostile sandbox (real Docker, the real CLI)', () => {
  let t: TestDesk;
  const sb = uniqueName('cp-hostile');
  const base = mkdtempSync(join(tmpdir(), 'sdesk-cp-hostile-'));
  const cli = (...args: string[]) =>
    execFileP(process.execPath, [BIN, ...args], { env: { ...process.env, SANDBOX_DESK_HOME: t.dataDir }, encoding: 'utf8' }).then(
      (r) => ({ code: 0, ...r }),
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
  const sh = async (command: string, opts: { session?: string; user?: string } = {}) => {
    const r = await t.desk.exec({ sandbox: sb, command, ...opts });
    expect(r.exitCode, r.stderr).toBe(0);
    return r;
  };

  beforeAll(async () => {
    t = tempDesk();
    await t.desk.createSandbox({ name: sb, backend: 'docker' });
    await sh(
      `cat > /usr/local/bin/cat <<'EOF'\n${HOSTILE_CAT}EOF\nchmod 755 /usr/local/bin/cat\n` +
        // The two folder names, each reached through a symlink the agent controls: a session
        // whose cwd is the symlink is entered physically (cd -P), so the script's resolved path holds
        // the newline.
        `for d in "$(printf '/tmp/.profile\\necho PWNED;:')" "$(printf '/tmp/x/..\\nzz')"; do mkdir -p "$d"; printf 'sandbox report\\n' > "$d/report.txt"; done\n` +
        `ln -s "$(printf '/tmp/.profile\\necho PWNED;:')" /tmp/to-profile; ln -s "$(printf '/tmp/x/..\\nzz')" /tmp/to-dotdot\n` +
        `chmod -R a+rwx /tmp/x /tmp/.profile*`,
      { user: 'root' },
    );
    t.desk.createSession({ sandbox: sb, key: 'profile', cwd: '/tmp/to-profile' });
    t.desk.createSession({ sandbox: sb, key: 'dotdot', cwd: '/tmp/to-dotdot' });
  }, 180_000);
  afterAll(async () => {
    rmSync(base, { recursive: true, force: true });
    await t.dispose();
  }, 120_000);

  it('a session cwd named with a newline cannot choose where the file lands or what it holds', async () => {
    // Both of the names at once: each its own folder here, so the two runs cannot meet.
    const copy = async (session: 'profile' | 'dotdot') => {
      const root = join(base, session);
      const home = join(root, 'a', 'b', 'home');
      mkdirSync(home, { recursive: true });
      const r = await cli('cp', `${sb}:report.txt`, `${home}/`, '--session', session);
      expect(r.code, r.stderr).toBe(0);
      expect(tree(root)).toEqual(['a', 'a/b', 'a/b/home', 'a/b/home/report.txt']);
      expect(readFileSync(join(home, 'report.txt'), 'utf8')).toBe('sandbox report\n');
      // The whole path the sandbox resolved, newline and all, is only reported: escaped, on one line.
      const from = session === 'profile' ? '/tmp/.profile\\x0aecho PWNED;:' : '/tmp/x/..\\x0azz';
      expect(r.stderr).toBe(`copied 15 bytes from ${sb}:${from}/report.txt to ${join(home, 'report.txt')}\n`);
    };
    await Promise.all([copy('profile'), copy('dotdot')]);
  });

  it('an upload into such a cwd is reported where it really landed, and touches nothing here', async () => {
    const root = join(base, 'upload');
    mkdirSync(root);
    writeFileSync(join(root, 'up.txt'), 'from the host\n');
    const r = await cli('cp', join(root, 'up.txt'), `${sb}:`, '--session', 'profile', '--json');
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ path: '/tmp/.profile\necho PWNED;:/up.txt', bytes: 14 });
    expect((await sh(`cat /tmp/to-profile/up.txt`)).stdout).toBe('from the host\n');
    expect(tree(root)).toEqual(['up.txt']);
  });

  it('a file truncated in the sandbox mid-transfer is an error: partial copy removed, existing target untouched', async () => {
    await sh('truncate -s 64M /tmp/shrinks.bin');
    const dir = join(base, 'truncated');
    mkdirSync(dir);
    writeFileSync(join(dir, 'shrinks.bin'), 'the copy from yesterday');
    const r = await cli('cp', `${sb}:/tmp/shrinks.bin`, dir);
    expect(r.code).toBe(125);
    expect(r.stderr).toMatch(
      /\/tmp\/shrinks\.bin changed in the sandbox while it was copied: 67108864 bytes were announced, 1048576 arrived — copy it again/,
    );
    expect(tree(dir)).toEqual(['shrinks.bin']);
    expect(readFileSync(join(dir, 'shrinks.bin'), 'utf8')).toBe('the copy from yesterday');
  });

  /** Starts a download of a file that stalls after 64 KiB; resolves once 64 KiB are in the part file. */
  const stalled = async (dir: string): Promise<{ child: ChildProcess; part: string; exited: Promise<number | null> }> => {
    const child = spawn(process.execPath, [BIN, 'cp', `${sb}:/tmp/slow.bin`, dir], {
      env: { ...process.env, SANDBOX_DESK_HOME: t.dataDir },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const part = join(dir, `.slow.bin.sdesk-part-${child.pid}`);
    for (let i = 0; i < 600 && !(existsSync(part) && statSync(part).size === 65536); i++) await new Promise((r) => setTimeout(r, 50));
    expect(statSync(part).size).toBe(65536);
    return { child, part, exited };
  };

  it('SIGINT or SIGTERM of a cp download removes its part file', async () => {
    await sh('head -c 1000000 /dev/urandom > /tmp/slow.bin');
    await Promise.all(
      (['SIGINT', 'SIGTERM'] as const).map(async (sig) => {
        const dir = join(base, `signal-${sig}`);
        mkdirSync(dir);
        const { child, exited } = await stalled(dir);
        let stderr = '';
        child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
        child.kill(sig);
        expect(await exited).toBe(125);
        expect(stderr).toMatch(/was interrupted; the partial file was removed/);
        expect(tree(dir)).toEqual([]);
      }),
    );
  });

  it('a part file left by a SIGKILLed cp is swept by the next cp into that folder', async () => {
    const dir = join(base, 'killed');
    mkdirSync(dir);
    const { child, part, exited } = await stalled(dir);
    child.kill('SIGKILL');
    await exited;
    expect(existsSync(part)).toBe(true);
    const r = await cli('cp', `${sb}:report.txt`, dir, '--session', 'profile');
    expect(r.code, r.stderr).toBe(0);
    expect(tree(dir)).toEqual(['report.txt']);
  });

  it('cp to a missing folder says which folder and what to do, and creates nothing (there or here)', async () => {
    const missing = join(base, 'nonexist');
    // As a file in it, and as the folder itself (which wrote the whole file into the cwd, then failed).
    const runs = await Promise.all([
      cli('cp', `${sb}:report.txt`, join(missing, 'x.txt'), '--session', 'profile'),
      cli('cp', `${sb}:report.txt`, `${missing}/`, '--session', 'profile'),
    ]);
    for (const r of runs) {
      expect(r.code).toBe(125);
      expect(r.stderr).toBe(
        `sandbox-desk: the folder ${missing} does not exist on this machine — create it first (mkdir -p ${JSON.stringify(missing)}) or copy into a folder that exists\n`,
      );
    }
    expect(tree(base).filter((p) => !/^(profile|dotdot|upload|truncated|signal-SIG\w+|killed)(\/|$)/.test(p))).toEqual([]);
  });
});
