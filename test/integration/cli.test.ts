/**
 * The `sandbox-desk` command as a user runs it: the real bin, a separate process per call, a real
 * Docker engine, exit codes and JSON shapes.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from './helpers.js';

const BIN = resolve(import.meta.dirname, '../../bin/sandbox-desk.js');

describe('sandbox-desk CLI', () => {
  let home: string;
  const made: string[] = [];
  const cli = (...args: string[]) => {
    const r = spawnSync(process.execPath, [BIN, ...args], {
      env: { ...process.env, SANDBOX_DESK_HOME: home },
      encoding: 'utf8',
      timeout: 120_000,
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr, json: () => JSON.parse(r.stdout) as Record<string, unknown> };
  };
  beforeAll(() => {
    home = mkdtempSync(join(tmpdir(), 'sdesk-cli-'));
  });
  afterAll(() => {
    for (const n of made) cli('sandbox', 'rm', n, '--force');
    rmSync(home, { recursive: true, force: true });
  });

  it('create with --default-cwd ~, exec pwd, inspect: the real home everywhere', () => {
    const name = uniqueName('c');
    made.push(name);
    const created = cli('sandbox', 'create', name, '--backend', 'docker', '--default-cwd', '~');
    expect(created.code, created.stderr).toBe(0);
    const r = cli('exec', name, '--json', '--', 'pwd');
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({
      exitCode: 0,
      stdout: '/home/agent\n',
      cwd: '/home/agent',
      cwdObserved: true,
      deniedCount: 0,
      mode: 'shell',
    });
    expect(Object.keys(r.json())).toEqual(
      expect.arrayContaining(['exitCode', 'stdout', 'stderr', 'cwd', 'cwdObserved', 'warnings', 'durationMs']),
    );
    const info = cli('sandbox', 'inspect', name, '--json').json();
    expect(info).toMatchObject({
      backend: 'docker',
      state: 'running',
      declaredDefaultCwd: '~',
      home: '/home/agent',
      tempDir: '/tmp',
      supportsStreams: true,
      isContainer: true,
    });
  });

  it("exits with the command's exit code, prints raw output without --json, and joins the words after --", () => {
    const name = uniqueName('c');
    made.push(name);
    cli('sandbox', 'create', name, '--backend', 'docker');
    const r = cli('exec', name, '--', 'echo', 'out;', 'echo', 'err', '>&2;', 'exit', '3');
    expect(r).toMatchObject({ code: 3, stdout: 'out\n', stderr: 'err\n' });
    expect(cli('exec', name, '--no-shell', '--json', '--', 'true').json()).toMatchObject({ mode: 'oneshot' });
  });

  it('sessions keep their own cwd across separate CLI processes; session list and rm', () => {
    const name = uniqueName('c');
    made.push(name);
    cli('sandbox', 'create', name, '--backend', 'docker');
    cli('exec', name, '--session', 'a', '--', 'cd /tmp');
    cli('exec', name, '--session', 'b', '--', 'cd /etc');
    expect(cli('exec', name, '--session', 'a', '--', 'pwd').stdout).toBe('/tmp\n');
    expect(cli('exec', name, '--session', 'b', '--', 'pwd').stdout).toBe('/etc\n');
    const sessions = cli('session', 'list', name, '--json').json() as unknown as {
      key: string;
      cwd: string;
      source: string;
      observedAt: string;
      parent: null;
    }[];
    expect(sessions.map((s) => [s.key, s.cwd])).toEqual(
      expect.arrayContaining([
        ['a', '/tmp'],
        ['b', '/etc'],
      ]),
    );
    expect(sessions[0]).toHaveProperty('observedAt');
    expect(cli('session', 'rm', name, 'a').code).toBe(0);
    expect(cli('exec', name, '--session', 'a', '--', 'pwd').stdout).toBe('/home/agent\n');
  });

  it('a step request without a cwd is refused with exit 125 and cwd_unresolved', () => {
    const name = uniqueName('c');
    made.push(name);
    cli('sandbox', 'create', name, '--backend', 'docker');
    const r = cli('exec', name, '--step', 'step-1', '--json', '--', 'touch /tmp/ran');
    expect(r.code).toBe(125);
    expect(r.json()).toMatchObject({ error: { code: 'cwd_unresolved' } });
    expect(cli('exec', name, '--', 'test -e /tmp/ran').code).toBe(1);
    expect(cli('exec', name, '--step', 'step-2', '--workdir', '/tmp', '--', 'pwd').stdout).toBe('/tmp\n');
  });

  it('Sandbox Desk\'s own errors exit 125: one line on stderr, or {"error":{code,message}} with --json', () => {
    const missing = cli('exec', 'no-such-sandbox', '--', 'true');
    expect(missing.code).toBe(125);
    expect(missing.stderr.trim().split('\n')[0]).toMatch(/^sandbox-desk: no sandbox named no-such-sandbox/);
    expect(missing.stderr).not.toMatch(/\n\s+at /);
    const j = cli('exec', 'no-such-sandbox', '--json', '--', 'true');
    expect(j.code).toBe(125);
    expect(j.json()).toEqual({ error: expect.objectContaining({ code: 'not_found', message: expect.any(String) }) });
    expect(cli('sandbox', 'create', 'x', '--backend', 'nope', '--json').json()).toMatchObject({ error: { code: 'unknown_backend' } });
    expect(cli('sandbox', 'create', 'bad/name', '--backend', 'docker').code).toBe(125);
    expect(cli('sandbox', 'bogus').code).toBe(125);
    for (const t of ['0', '-3', 'abc', '']) {
      const r = cli('exec', 'whatever', '--timeout', t, '--json', '--', 'true');
      expect(r.code, t).toBe(125);
      expect(r.json(), t).toMatchObject({ error: { code: 'invalid_input' } });
    }
    expect(cli('exec', 'whatever', '--json').json()).toMatchObject({ error: { code: 'invalid_input' } });
  });

  it('a timeout reports exit 124 and an unobserved cwd', () => {
    const name = uniqueName('c');
    made.push(name);
    cli('sandbox', 'create', name, '--backend', 'docker');
    const r = cli('exec', name, '--timeout', '1', '--json', '--', 'cd /tmp && sleep 30');
    expect(r.code).toBe(124);
    expect(r.json()).toMatchObject({ timedOut: true, cwdObserved: false, cwd: null });
  });

  it('list, stop, start and rm', () => {
    const name = uniqueName('c');
    cli('sandbox', 'create', name, '--backend', 'docker', '--no-start');
    expect(
      (cli('sandbox', 'list', '--json').json() as unknown as { name: string; state: string }[]).find((s) => s.name === name)?.state,
    ).toBe('stopped');
    expect(cli('sandbox', 'list').stdout).toMatch(new RegExp(`${name}\\s+docker\\s+stopped`));
    expect(cli('sandbox', 'start', name, '--json').json()).toMatchObject({ state: 'running' });
    expect(cli('sandbox', 'rm', name).code).toBe(125);
    expect(cli('sandbox', 'stop', name).stdout).toBe(`${name}: stopped\n`);
    expect(cli('sandbox', 'rm', name, '--json').json()).toEqual({ removed: name });
    expect(cli('sandbox', 'inspect', name).code).toBe(125);
  });
});
