/**
 * Issue 35.4: `replay export --out` is a path the caller chose. `--out /etc` wrote seven files into
 * /etc; into a non-empty folder it overwrote same-named files; `--out` a file said `internal: EEXIST`;
 * `--out /proc/x` spun at 100 % CPU for good (a recursive mkdir loops there) — through the API, a
 * frozen `serve`. Now the export goes into a new folder of its own (only the last component is made)
 * or an empty one; the rest is refused with what to choose instead.
 *
 * Against the real CLI and a real data directory holding a recorded terminal (no sandbox needed: a
 * recording outlives its sandbox). Every folder is the test's own, under its temporary directory,
 * except the /proc path, where nothing can be made.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, removeHome, tempHome } from './serve-child.js';

describe('replay export --out', () => {
  const home = tempHome('export-out');
  const sb = `exp-${process.pid}`;
  const T0 = Date.parse('2026-03-01T10:00:00.000Z');
  const exportTo = (out: string, timeout = 20_000) => {
    const r = spawnSync(process.execPath, [BIN, 'replay', 'export', sb, '--out', out], {
      env: { ...process.env, SANDBOX_DESK_HOME: home },
      encoding: 'utf8',
      timeout,
      killSignal: 'SIGKILL',
    });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  };

  beforeAll(() => {
    const terminals = join(home, 'recordings', sb, 'terminals');
    mkdirSync(terminals, { recursive: true });
    writeFileSync(
      join(terminals, 'ab12.cast'),
      [
        JSON.stringify({ version: 2, width: 80, height: 24, timestamp: T0 / 1000 }),
        JSON.stringify([0.5, 'o', 'hello']),
        JSON.stringify([2, 'o', 'bye']),
      ].join('\n') + '\n',
    );
  });
  afterAll(() => removeHome(home));

  it('a folder with files in it is refused and left as it was (the /etc case)', () => {
    const full = join(home, 'full');
    mkdirSync(full);
    writeFileSync(join(full, 'events.jsonl'), 'mine\n');
    const r = exportTo(full);
    expect(r.status, r.stderr).toBe(125);
    expect(r.stderr).toContain(`--out ${full} is not empty`);
    expect(r.stderr).toMatch(/choose a new folder/);
    expect(readdirSync(full)).toEqual(['events.jsonl']);
    expect(readFileSync(join(full, 'events.jsonl'), 'utf8')).toBe('mine\n');
  });

  it('a file is refused as a file (not internal: EEXIST)', () => {
    const file = join(home, 'a-file');
    writeFileSync(file, 'x');
    const r = exportTo(file);
    expect(r.status).toBe(125);
    expect(r.stderr).toContain(`--out ${file} is a file, not a folder`);
    expect(r.stderr).not.toMatch(/internal|EEXIST/);
  });

  it('a path under /proc is refused at once (it used to spin for good)', () => {
    const started = Date.now();
    const r = exportTo(`/proc/sdesk-export-${process.pid}`);
    expect(r.status, `killed after ${Date.now() - started} ms: ${r.stderr}`).toBe(125);
    expect(r.stderr).toMatch(/cannot be used for the export: that filesystem does not take new folders/);
  });

  it('only the last component is made: a missing parent is refused', () => {
    const deep = join(home, 'no', 'such', 'parent');
    const r = exportTo(deep);
    expect(r.status).toBe(125);
    expect(r.stderr).toContain(`its parent folder ${join(home, 'no', 'such')} does not exist`);
    expect(existsSync(join(home, 'no'))).toBe(false);
  });

  it('a new folder, and an existing empty one, take the export', () => {
    const fresh = join(home, 'fresh');
    const made = exportTo(fresh);
    expect(made.status, made.stderr).toBe(0);
    expect(readdirSync(fresh).sort()).toEqual(['events.jsonl', 'terminal-ab12.cast']);
    const empty = join(home, 'empty');
    mkdirSync(empty);
    expect(exportTo(empty).status).toBe(0);
    expect(readdirSync(empty).sort()).toEqual(['events.jsonl', 'terminal-ab12.cast']);
    // Exporting again into the folder it just filled is refused: nothing is overwritten.
    expect(exportTo(fresh).stderr).toContain('is not empty');
  });
});
