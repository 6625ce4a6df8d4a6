import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resourcePath } from '../platform/project-root.js';

/**
 * launcher.sh's `clean_profile`, cut out of the launcher itself and run on a profile folder here: what
 * a restored checkpoint or a killed sandbox leaves (exit_type Crashed, another host's SingletonLock)
 * must read as a clean exit before Chromium starts, or it greets the person with "Restore pages?".
 */
const launcher = readFileSync(resourcePath('desktop', 'launcher.sh'), 'utf8');
const fn = /^clean_profile\(\) \{\n[\s\S]*?\n\}\n/m.exec(launcher)?.[0];

function cleanProfile(profile: string): { code: number | null; stderr: string } {
  // The system's python3 first, as in the sandbox image (a version manager's shim on PATH costs seconds a start).
  const r = spawnSync('bash', ['-c', `${fn}\nclean_profile "$1"`, 'test', profile], {
    encoding: 'utf8',
    env: { ...process.env, PATH: `/usr/bin:/bin:${process.env.PATH ?? ''}` },
  });
  return { code: r.status, stderr: r.stderr };
}

describe("launcher.sh clean_profile (Chromium's profile before each launch)", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const profile = (prefs: string | null): string => {
    const dir = mkdtempSync(join(tmpdir(), 'sdesk-profile-'));
    dirs.push(dir);
    mkdirSync(join(dir, 'Default'));
    if (prefs !== null) writeFileSync(join(dir, 'Default', 'Preferences'), prefs);
    return dir;
  };
  const prefsOf = (dir: string) => JSON.parse(readFileSync(join(dir, 'Default', 'Preferences'), 'utf8')) as Record<string, unknown>;

  it('is in the launcher', () => {
    expect(fn).toBeDefined();
  });

  it('a profile that says Crashed says Normal, exited cleanly, and keeps everything else', () => {
    const dir = profile(JSON.stringify({ profile: { exit_type: 'Crashed', exited_cleanly: false, name: 'Person 1' }, browser: { x: 1 } }));
    expect(cleanProfile(dir)).toEqual({ code: 0, stderr: '' });
    expect(prefsOf(dir)).toEqual({ profile: { exit_type: 'Normal', exited_cleanly: true, name: 'Person 1' }, browser: { x: 1 } });
  });

  it("removes the lock of a Chromium of another host (the checkpointed container's) or a dead one", () => {
    for (const owner of ['0123456789ab-4242', `${hostname()}-2147483646`]) {
      const dir = profile(JSON.stringify({ profile: { exit_type: 'Normal', exited_cleanly: true } }));
      symlinkSync(owner, join(dir, 'SingletonLock'));
      symlinkSync('/tmp/gone/SingletonSocket', join(dir, 'SingletonSocket'));
      writeFileSync(join(dir, 'SingletonCookie'), '');
      expect(cleanProfile(dir).code).toBe(0);
      for (const f of ['SingletonLock', 'SingletonSocket', 'SingletonCookie']) expect(() => lstatSync(join(dir, f))).toThrow();
    }
  });

  it('a profile without Preferences (the first start) is left as it is', () => {
    const dir = profile(null);
    expect(cleanProfile(dir)).toEqual({ code: 0, stderr: '' });
    expect(existsSync(join(dir, 'Default', 'Preferences'))).toBe(false);
  });

  it('an unreadable Preferences is left untouched and said so; the launch goes on', () => {
    const dir = profile('{"profile": {"exit_type": "Crashed"');
    const r = cleanProfile(dir);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('could not mark');
    expect(readFileSync(join(dir, 'Default', 'Preferences'), 'utf8')).toBe('{"profile": {"exit_type": "Crashed"');
  });
});
