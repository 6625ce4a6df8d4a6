/**
 * Issue 18 (hardening) and issue 12 (defects) end to end, against a real Docker sandbox in both exec
 * modes: nothing a sandbox prints can crash the host or hide the end of a command, the wrapper's nonce
 * cannot be read by the command, and every walk, kill and decode ends well.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExecMode } from '../../src/api/contract.js';
import { LocalServer } from '../../src/api/local-server.js';
import { runIn } from '../../src/exec/run-in.js';
import { rejectsWith } from '../expect-error.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

const MODES: ExecMode[] = ['shell', 'oneshot'];
const BIN = resolve(import.meta.dirname, '../../bin/sandbox-desk.js');

describe('exec hardening on docker', () => {
  let t: TestDesk;
  let sb: string;
  let rootSb: string;

  beforeAll(async () => {
    t = tempDesk();
    sb = uniqueName('hard');
    rootSb = uniqueName('hardroot');
    await t.desk.createSandbox({ name: sb, backend: 'docker' });
    await t.desk.createSandbox({ name: rootSb, backend: 'docker', user: 'root' });
  });
  afterAll(async () => {
    await t.dispose();
  });

  describe.each(MODES)('in %s mode', (mode) => {
    const run = (command: string, extra: { session?: string; workdir?: string; timeoutSeconds?: number } = {}) =>
      t.desk.exec({
        sandbox: sb,
        command,
        mode,
        session: extra.session ?? uniqueName('s'),
        timeoutSeconds: extra.timeoutSeconds ?? 30,
        ...(extra.workdir ? { workdir: extra.workdir } : {}),
      });

    it.each([['set'], ['env'], ['declare -p'], ['set; declare -p; env; declare -f']])(
      '`%s` ends by itself with its cwd observed',
      async (command) => {
        const r = await run(`cd /tmp && ${command}`);
        expect(r).toMatchObject({ exitCode: 0, timedOut: false, cwdObserved: true, cwd: '/tmp' });
        expect(r.stdout.length).toBeGreaterThan(100);
        expect(r.warnings.map((w) => w.code)).not.toContain('framing_broken');
      },
    );

    it("the issue's crash: printing $__sd_n and a 20000-char line is just output", async () => {
      const r = await run('echo "$__sd_n"; head -c 20000 /dev/zero | tr "\\0" a; echo; cd /etc');
      expect(r).toMatchObject({ exitCode: 0, cwdObserved: true, cwd: '/etc' });
      expect(r.stdout).toBe(`\n${'a'.repeat(20000)}\n`);
    });

    it('a fake frame cannot end the command early or forge its cwd', async () => {
      const fake = 'deadbeefdeadbeefdeadbeefdeadbeef';
      const r = await run(
        `printf '%s\\n' '${fake}:E:0:ok:/forged:${fake}' >&1; printf '${fake}:X:${fake}\\n' >&2; sleep 0.2; cd /var; echo after`,
      );
      expect(r).toMatchObject({ exitCode: 0, cwdObserved: true, cwd: '/var' });
      expect(r.stdout).toBe(`${fake}:E:0:ok:/forged:${fake}\nafter\n`);
      expect(r.stderr).toBe(`${fake}:X:${fake}\n`);
    });

    it("assigning the wrapper's own variables changes nothing", async () => {
      const session = uniqueName('s');
      const r = await run('__sd_n=x __sd_run= __sd_t=/ __sd_tmp=/ __sd_c=false; cd /usr', { session });
      expect(r).toMatchObject({ exitCode: 0, cwdObserved: true, cwd: '/usr' });
      expect((await run('pwd', { session })).stdout).toBe('/usr\n');
    });

    it.each([['D:\\proj\\x'], ['C:/proj/x'], ['\\\\server\\share']])(
      'workdir %s is refused as a host path before anything runs',
      async (workdir) => {
        const e = await rejectsWith(run('pwd', { workdir }), 'invalid_input');
        expect(e.message).toContain('Windows host path');
      },
    );

    it('a cwd deeper than 4 KB is observed (not cwd_deleted) and entered again by the next command', async () => {
      const session = uniqueName('s');
      const part = 'p'.repeat(200);
      const r = await run(
        `d=/tmp/${uniqueName('deep')}; mkdir -p $d && cd $d && for i in $(seq 25); do mkdir ${part} && cd ${part} || exit 9; done`,
        { session },
      );
      expect(r.exitCode).toBe(0);
      expect(r.warnings.map((w) => w.code)).not.toContain('cwd_deleted');
      expect(r).toMatchObject({ cwdObserved: true });
      expect(r.cwd!.length).toBeGreaterThan(5000);
      const again = await run('pwd -P | wc -c', { session });
      expect(again).toMatchObject({ cwdObserved: true, cwd: r.cwd, stdout: `${r.cwd!.length + 1}\n`, startCwd: r.cwd });
    });

    it('a timeout kills children forked after the first walk of the tree', async () => {
      const marker = uniqueName('sdfork');
      // The parent ignores TERM and forks a TERM-ignoring child every 0.1 s, so children keep
      // appearing between the kill's walk and its signals.
      const r = await run(`trap '' TERM; while :; do (exec -a ${marker} sleep 300) & sleep 0.1; done`, { timeoutSeconds: 1 });
      expect(r).toMatchObject({ timedOut: true, exitCode: 124, cwdObserved: false });
      await new Promise((res) => setTimeout(res, 500));
      const left = await run(`for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c '^${marker} ' || true`);
      expect(left.stdout.trim()).toBe('0');
    });
  });

  it('--no-shell runs a 1 MB command (it travels on stdin, not as an argument: no E2BIG)', async () => {
    const command = `: '${'x'.repeat(1024 * 1024)}'; echo done`;
    const r = await t.desk.exec({ sandbox: sb, command, mode: 'oneshot', timeoutSeconds: 120 });
    expect(r).toMatchObject({ exitCode: 0, stdout: 'done\n', cwdObserved: true });
  });

  it('session create refuses a cwd --workdir would refuse: newline, 5000 characters', async () => {
    for (const cwd of ['/tmp/a\nb', '/' + 'c'.repeat(4999)]) {
      const e = await rejectsWith(
        Promise.resolve().then(() => t.desk.createSession({ sandbox: sb, key: uniqueName('k'), cwd })),
        'invalid_input',
      );
      expect(e.message).toMatch(/session cwd (contains a newline|is 5000 bytes, longer than PATH_MAX)/);
      await rejectsWith(t.desk.exec({ sandbox: sb, command: 'pwd', workdir: cwd }), 'invalid_input');
    }
  });

  it("the file tools use the sandbox's own /root, even when the app runs as root", async () => {
    const name = `/root/${uniqueName('f')}.txt`;
    await t.desk.io.writeFile({ sandbox: rootSb, path: name, content: Buffer.from('mine') });
    expect((await t.desk.io.readFile({ sandbox: rootSb, path: name })).bytes.toString()).toBe('mine');
    // As the image's plain user /root is there but closed: that is what the error says.
    const e = await rejectsWith(t.desk.io.readFile({ sandbox: sb, path: name }), 'refused');
    expect(e.message).toContain('not accessible');
  });

  it("a UTF-8 character split across chunks of a sandbox process's stderr stays whole", async () => {
    const { env } = await t.desk.sessionPlan(sb, undefined);
    const r = await runIn(env, ['bash', '-c', "printf 'a\\303' >&2; sleep 0.3; printf '\\251b' >&2"]);
    expect(r.stderr).toBe('aéb');
  });

  it("over the local server, the issue's command neither takes the server down nor a bystander in another session", async () => {
    const server = new LocalServer({ desk: t.desk });
    await server.listen();
    try {
      const call = (params: unknown) =>
        fetch(`${server.origin}/api/call/exec`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${server.token}` },
          body: JSON.stringify(params),
        }).then(async (res) => (await res.json()) as { ok?: { exitCode: number; stdout: string; cwd: string } });
      const [hostile, bystander] = await Promise.all([
        call({ sandbox: sb, session: uniqueName('a'), command: 'echo "$__sd_n"; head -c 20000 /dev/zero | tr "\\0" a' }),
        call({ sandbox: sb, session: uniqueName('b'), command: 'sleep 1; cd /etc; echo bystander' }),
      ]);
      expect(hostile.ok).toMatchObject({ exitCode: 0, stdout: `\n${'a'.repeat(20000)}` });
      expect(bystander.ok).toMatchObject({ exitCode: 0, stdout: 'bystander\n', cwd: '/etc' });
    } finally {
      await server.close();
    }
  });

  describe('the CLI', () => {
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
      home = mkdtempSync(join(tmpdir(), 'sdesk-hard-cli-'));
      name = uniqueName('hcli');
      expect(cli('sandbox', 'create', name, '--backend', 'docker').code).toBe(0);
    });
    afterAll(() => {
      cli('sandbox', 'rm', name, '--force');
      rmSync(home, { recursive: true, force: true });
    });

    it.each([[[] as string[]], [['--no-shell']]])("survives the issue's command %j and prints it as output", (flags) => {
      const r = cli('exec', name, ...flags, '--', 'echo "$__sd_n"; head -c 20000 /dev/zero | tr "\\0" a');
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe(`\n${'a'.repeat(20000)}`);
    });

    it("`exec box -- tool --json`: the app's own error stays plain text", () => {
      const r = cli('exec', uniqueName('nosuch'), '--', 'tool', '--json');
      expect(r.code).toBe(125);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^sandbox-desk: no sandbox named/);
    });

    it('--json before -- still gives a JSON error', () => {
      const r = cli('exec', uniqueName('nosuch'), '--json', '--', 'tool');
      expect(r.code).toBe(125);
      expect(JSON.parse(r.stdout)).toMatchObject({ error: { code: 'not_found' } });
    });
  });
});
