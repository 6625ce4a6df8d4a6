/**
 * Config, plugins on by default, and the log, as a user meets them: the real bin (compiled dist/), one
 * process per call, a fresh home each time. The built-in plugins (plugins/ssh, plugins/podman) must be
 * built (`npx tsc -b`), as `npm run setup` does.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const BIN = resolve(import.meta.dirname, '../../bin/sandbox-desk.js');
const made: string[] = [];
afterAll(() => made.forEach((d) => rmSync(d, { recursive: true, force: true })));

function freshDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'sdesk-cfgcli-'));
  made.push(d);
  return d;
}

/** Runs the bin with only the given Sandbox Desk / XDG variables (the host's are dropped: hermetic). */
function run(env: Record<string, string>, ...args: string[]) {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(SANDBOX_DESK_|XDG_)/.test(k)));
  const r = spawnSync(process.execPath, [BIN, ...args], { env: { ...base, ...env }, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, json: <T = Record<string, unknown>>() => JSON.parse(r.stdout) as T };
}

interface Plugin {
  name: string;
  status: string;
  isolation: string;
  source: string;
  providers: string[];
  error: string | null;
}

describe('config and plugins from the CLI', () => {
  it('--version prints the package version', () => {
    const home = freshDir();
    const r = run({ SANDBOX_DESK_HOME: home }, '--version');
    expect(r.code).toBe(0);
    const version = (JSON.parse(readFileSync(resolve(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string }).version;
    expect(r.stdout.trim()).toBe(version);
  });

  it.each(['in-process', 'host'])('plugin list --json on a fresh data dir: ssh and podman loaded, isolation %s', (isolation) => {
    const home = freshDir();
    // One mode through the flag, the other through the config, so both ways of choosing are exercised.
    if (isolation === 'host') expect(run({ SANDBOX_DESK_HOME: home }, 'config', 'set', 'plugins.isolation', 'host').code).toBe(0);
    const r = run({ SANDBOX_DESK_HOME: home }, 'plugin', 'list', '--json');
    expect(r.code, r.stderr).toBe(0);
    const list = r.json<Plugin[]>();
    expect(list.map((p) => [p.name, p.status, p.isolation, p.source, p.providers.join(), p.error])).toEqual([
      ['sandbox-desk-ssh', 'loaded', isolation, 'builtin', 'ssh', null],
      ['sandbox-desk-podman', 'loaded', isolation, 'builtin', 'podman', null],
    ]);
    const flag = run({ SANDBOX_DESK_HOME: freshDir() }, '--plugin-isolation', isolation, 'plugin', 'list', '--json');
    expect(flag.json<Plugin[]>().map((p) => [p.name, p.status, p.isolation])).toEqual([
      ['sandbox-desk-ssh', 'loaded', isolation],
      ['sandbox-desk-podman', 'loaded', isolation],
    ]);
  });

  it('plugin disable ssh hides it (the table says so); enable brings it back', () => {
    const env = { SANDBOX_DESK_HOME: freshDir() };
    const off = run(env, 'plugin', 'disable', 'ssh', '--json');
    expect(off.json()).toMatchObject({ plugin: 'ssh', enabled: false, changed: true, disabled: ['ssh'] });
    expect(
      run(env, 'plugin', 'list', '--json')
        .json<Plugin[]>()
        .map((p) => p.name),
    ).toEqual(['sandbox-desk-podman']);
    expect(run(env, 'plugin', 'list').stdout).toMatch(/Disabled \(plugins\.disabled; `plugin enable NAME` turns one on\): ssh/);
    expect(run(env, 'plugin', 'disable', 'sandbox-desk-ssh').stdout).toMatch(/already disabled/);
    expect(run(env, 'plugin', 'enable', 'sandbox-desk-ssh', '--json').json()).toMatchObject({ changed: true, disabled: [] });
    expect(
      run(env, 'plugin', 'list', '--json')
        .json<Plugin[]>()
        .map((p) => p.name),
    ).toEqual(['sandbox-desk-ssh', 'sandbox-desk-podman']);
  });

  it('config get|set|unset|list --json; a bad value or an unknown key is refused with what is valid', () => {
    const home = freshDir();
    const env = { SANDBOX_DESK_HOME: home };
    const list = run(env, 'config', 'list', '--json').json<{
      file: string;
      exists: boolean;
      keys: { key: string; value: unknown; set: boolean; description: string }[];
    }>();
    expect(list).toMatchObject({ file: join(home, 'config.json'), exists: false });
    expect(list.keys.find((k) => k.key === 'shell.idleMs')).toMatchObject({ value: 600_000, set: false });
    expect(list.keys.find((k) => k.key === 'agents.allowOtherUsers')).toMatchObject({ value: false, set: false });
    expect(run(env, 'config', 'set', 'exec.timeoutMs', '1500', '--json').json()).toMatchObject({
      key: 'exec.timeoutMs',
      value: 1500,
      file: join(home, 'config.json'),
    });
    expect(run(env, 'config', 'get', 'exec.timeoutMs', '--json').json()).toEqual({ key: 'exec.timeoutMs', value: 1500, set: true });
    expect(JSON.parse(readFileSync(join(home, 'config.json'), 'utf8'))).toEqual({ exec: { timeoutMs: 1500 } });

    const bad = run(env, 'config', 'set', 'serve.port', 'eighty', '--json');
    expect(bad.code).toBe(125);
    expect(bad.json<{ error: { message: string; hint: string } }>().error).toMatchObject({
      message: expect.stringMatching(/serve\.port: "eighty" is not a valid value/),
      hint: expect.stringMatching(/0-65535, 0 for a free one/),
    });
    const unknown = run(env, 'config', 'set', 'shell.idle', '5');
    expect(unknown.code).toBe(125);
    expect(unknown.stderr).toMatch(/unknown config key "shell\.idle" — did you mean shell\.idleMs\?/);
    // Nothing refused was written.
    expect(JSON.parse(readFileSync(join(home, 'config.json'), 'utf8'))).toEqual({ exec: { timeoutMs: 1500 } });
    expect(run(env, 'config', 'unset', 'exec.timeoutMs', '--json').json()).toMatchObject({ value: 600_000 });
    // The value in force reaches the core: a command with no --timeout is killed after exec.timeoutMs.
    run(env, 'config', 'set', 'exec.timeoutMs', '1000');
    expect(run(env, 'sandbox', 'create', 'h', '--backend', 'local', '--json').code).toBe(0);
    const slow = run(env, 'exec', 'h', '--json', '--', 'sleep', '30');
    expect(slow.code).toBe(124);
  });

  it('--debug writes debug lines to the log under the home; the default level does not', () => {
    const home = freshDir();
    const log = join(home, 'logs', 'sandbox-desk.log');
    expect(run({ SANDBOX_DESK_HOME: home }, 'plugin', 'list').code).toBe(0);
    const lines = () =>
      readFileSync(log, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { level: number; msg: string; component: string });
    expect(lines().some((l) => l.level === 20)).toBe(false);
    // Plugins load in the service now (issue 34), and "loaded" is a debug line (issue 36: it flooded the
    // log): what the default level keeps under the home is the service's info, e.g. that it serves.
    expect(lines().some((l) => l.level === 30 && l.component === 'service')).toBe(true);
    expect(run({ SANDBOX_DESK_HOME: home }, '--debug', 'plugin', 'list').code).toBe(0);
    expect(
      lines()
        .filter((l) => l.level === 20)
        .map((l) => l.msg),
    ).toEqual(['command', 'command done']);
    const bad = run({ SANDBOX_DESK_HOME: home }, '--log-level', 'chatty', 'plugin', 'list');
    expect(bad.code).toBe(125);
    expect(bad.stderr).toMatch(/--log-level must be one of trace, debug, info, warn, error, fatal, silent, got "chatty"/);
  });

  it('XDG layout: config in $XDG_CONFIG_HOME, log in $XDG_STATE_HOME; the old data-dir config is read, then moved by set', () => {
    const root = freshDir();
    const env = { XDG_DATA_HOME: join(root, 'data'), XDG_CONFIG_HOME: join(root, 'config'), XDG_STATE_HOME: join(root, 'state') };
    const oldFile = join(root, 'data', 'sandbox-desk', 'config.json');
    mkdirSync(join(root, 'data', 'sandbox-desk'), { recursive: true });
    writeFileSync(oldFile, JSON.stringify({ plugins: { isolation: 'host' } }));
    const list = run(env, 'plugin', 'list', '--json');
    expect(list.json<Plugin[]>().map((p) => p.isolation)).toEqual(['host', 'host']);
    const logFile = join(root, 'state', 'sandbox-desk', 'sandbox-desk.log');
    expect(readFileSync(logFile, 'utf8')).toMatch(
      /reading the old config .*data\/sandbox-desk\/config\.json; the config now lives in .*config\/sandbox-desk\/config\.json/,
    );
    const set = run(env, 'config', 'set', 'serve.port', '0', '--json');
    expect(set.json()).toMatchObject({ file: join(root, 'config', 'sandbox-desk', 'config.json'), movedFrom: oldFile });
    expect(JSON.parse(readFileSync(join(root, 'config', 'sandbox-desk', 'config.json'), 'utf8'))).toEqual({
      plugins: { isolation: 'host' },
      serve: { port: 0 },
    });
    expect(run(env, 'config', 'list', '--json').json()).toMatchObject({ legacy: false, exists: true });
    expect(existsSync(join(root, 'data', 'sandbox-desk', 'state.db'))).toBe(true);
  });
});
