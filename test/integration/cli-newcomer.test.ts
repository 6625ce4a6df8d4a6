/**
 * What a newcomer meets on the command line, through the real bin (a process per call) and a real
 * Docker engine: messages that say what was wrong and then what to do, the docker default, aliases,
 * bash completion that offers the sandboxes, and a failing `cd` that reads like the user's own.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from './helpers.js';

const BIN = resolve(import.meta.dirname, '../../bin/sandbox-desk.js');

describe('sandbox-desk CLI for a newcomer', () => {
  let home: string;
  let name: string;
  const cli = (...args: string[]) => {
    const r = spawnSync(process.execPath, [BIN, ...args], {
      env: { ...process.env, SANDBOX_DESK_HOME: home },
      encoding: 'utf8',
      timeout: 120_000,
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  beforeAll(() => {
    home = mkdtempSync(join(tmpdir(), 'sdesk-newcomer-'));
    name = uniqueName('nc');
    // No --backend: docker is the default.
    const created = cli('sandbox', 'create', name);
    if (created.code !== 0) throw new Error(created.stderr);
  });
  afterAll(() => {
    cli('sandbox', 'rm', name, '--force');
    rmSync(home, { recursive: true, force: true });
  });

  it('sandbox create without --backend makes a docker sandbox; sandbox ls lists it', () => {
    const ls = cli('sandbox', 'ls');
    expect(ls.code).toBe(0);
    expect(ls.stdout).toMatch(new RegExp(`^${name}\\s+docker\\s+running`, 'm'));
  });

  it("a typo'd backend: the error, then did you mean docker", () => {
    const r = cli('sandbox', 'create', uniqueName('nc'), '--backend', 'dokcer');
    expect(r.code).toBe(125);
    expect(r.stderr).toMatch(/^sandbox-desk: unknown backend 'dokcer' — did you mean docker\? \(available backends: [^)]*docker/);
  });

  it("a typo'd sandbox name: did you mean the one that exists", () => {
    const typo = name.slice(0, -1) + (name.endsWith('x') ? 'y' : 'x');
    const r = cli('sandbox', 'inspect', typo);
    expect(r.code).toBe(125);
    expect(r.stderr).toBe(`sandbox-desk: no sandbox named ${typo} — did you mean ${name}? (see \`sandbox-desk sandbox list\`)\n`);
  });

  it('exec NAME ls -la says the command goes after --', () => {
    const r = cli('exec', name, 'ls', '-la');
    expect(r.code).toBe(125);
    expect(r.stderr).toContain(
      `the command goes after --, so that its options are not taken for sandbox-desk's: sandbox-desk exec ${name} -- ls -la`,
    );
    expect(cli('exec', name, '--', 'ls', '-la', '/').stdout).toMatch(/^total /);
  });

  it('a failing cd reads "cd: /nope: No such file or directory", without the wrapper script\'s line', () => {
    const r = cli('exec', name, '--', 'cd /nope-newcomer');
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('cd: /nope-newcomer: No such file or directory\n');
    const oneshot = cli('exec', name, '--no-shell', '--', 'cd /nope-newcomer');
    expect(oneshot.stderr).toBe('cd: /nope-newcomer: No such file or directory\n');
  });

  it('a relative --default-cwd is refused before anything is made', () => {
    const other = uniqueName('nc');
    const r = cli('sandbox', 'create', other, '--default-cwd', 'projects/x');
    expect(r.code).toBe(125);
    expect(r.stderr).toBe(
      'sandbox-desk: default cwd "projects/x" is relative — give an absolute in-sandbox path (such as /projects/x), or ~ for the sandbox user\'s home\n',
    );
    expect(cli('sandbox', 'ls').stdout).not.toContain(other);
  });

  it('session ls shows keys bare unless they need quotes', () => {
    cli('exec', name, '--session', 'agent-1', '--', 'cd /tmp');
    cli('exec', name, '--session', 'two words', '--', 'cd /etc');
    const r = cli('session', 'ls', name);
    expect(r.stdout).toMatch(/^agent-1\s+-\s+\/tmp/m);
    expect(r.stdout).toMatch(/^"two words"\s+-\s+\/etc/m);
  });

  it('a stopped sandbox says since when, and its exit in words (inspect --json: stateSince, stateDetail)', () => {
    const other = uniqueName('nc');
    expect(cli('sandbox', 'create', other, '--no-start').code).toBe(0);
    try {
      const never = JSON.parse(cli('sandbox', 'inspect', other, '--json').stdout) as Record<string, unknown>;
      expect(never).toMatchObject({ state: 'stopped', stateSince: null });
      expect(cli('sandbox', 'start', other).code).toBe(0);
      const before = Date.now();
      expect(cli('sandbox', 'stop', other).code).toBe(0);
      const info = JSON.parse(cli('sandbox', 'inspect', other, '--json').stdout) as { stateSince: string; stateDetail: string };
      expect(info.stateDetail).toMatch(/^exited with code \d+/);
      expect(Date.parse(info.stateSince)).toBeGreaterThan(before - 60_000);
    } finally {
      cli('sandbox', 'rm', other, '--force');
    }
  });

  it('bash completion, sourced in a real bash, offers commands and the sandbox names', () => {
    const script = cli('completion', 'bash');
    expect(script.code).toBe(0);
    const dir = mkdtempSync(join(tmpdir(), 'sdesk-compl-'));
    try {
      // `sandbox-desk` on PATH is this checkout's bin, with this test's home.
      const shim = join(dir, 'sandbox-desk');
      writeFileSync(shim, `#!/bin/sh\nSANDBOX_DESK_HOME='${home}' exec '${process.execPath}' '${BIN}' "$@"\n`);
      chmodSync(shim, 0o755);
      writeFileSync(join(dir, 'completion.bash'), script.stdout);
      const complete = (...words: string[]): string[] => {
        const line = ['sandbox-desk', ...words];
        const r = spawnSync(
          'bash',
          [
            '-c',
            'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _sandbox_desk; printf "%s\\n" "${COMPREPLY[@]}"',
            'bash',
            join(dir, 'completion.bash'),
            ...line,
          ],
          { env: { ...process.env, PATH: `${dir}:${process.env.PATH}` }, encoding: 'utf8', timeout: 60_000 },
        );
        expect(r.status, r.stderr).toBe(0);
        return r.stdout.split('\n').filter(Boolean);
      };
      expect(complete('sa')).toEqual(['sandbox']);
      expect(complete('sandbox', 'st')).toEqual(['start', 'stop']);
      expect(complete('exec', name.slice(0, 4))).toContain(name);
      expect(complete('sandbox', 'create', 'x', '--backend', 'q')).toEqual(['qemu']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
