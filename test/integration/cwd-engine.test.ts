/**
 * The working-directory rules (hermes-notes §6 A–F, adapted), against real backends: a Docker
 * container and the local machine, each in both execution modes (persistent session shell, one-shot).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExecMode } from '../../src/api/contract.js';
import { SandboxDeskError } from '../../src/shared/errors.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

const isRoot = process.getuid?.() === 0;

interface Backend {
  backend: 'docker' | 'local';
  /** A fresh scratch directory inside the sandbox, writable by the sandbox user. */
  scratch(): Promise<string>;
  /** The user that may create root-owned directories (docker: root; local: the app's user when root). */
  rootUser: string | undefined;
  /** A user that cannot enter a 0700 root-owned directory. */
  plainUser: string | undefined;
}

const MODES: ExecMode[] = ['shell', 'oneshot'];

describe.each(['docker', 'local'] as const)('cwd engine on %s', (backendName) => {
  let t: TestDesk;
  let sb: string;
  let backend: Backend;
  const hostDirs: string[] = [];

  beforeAll(async () => {
    t = tempDesk();
    sb = uniqueName('cwd');
    if (backendName === 'docker') {
      await t.desk.createSandbox({ name: sb, backend: 'docker', defaultCwd: '~' });
      backend = {
        backend: 'docker',
        rootUser: 'root',
        plainUser: undefined, // the image's user: agent
        scratch: async () => {
          const d = `/tmp/${uniqueName('w')}`;
          await t.desk.exec({ sandbox: sb, command: `mkdir -p ${d}`, session: '__setup' });
          return d;
        },
      };
    } else {
      const home = mkdtempSync(join(tmpdir(), 'sdesk-local-'));
      hostDirs.push(home);
      await t.desk.createSandbox({ name: sb, backend: 'local', defaultCwd: home });
      backend = {
        backend: 'local',
        rootUser: undefined,
        plainUser: isRoot ? 'nobody' : undefined,
        scratch: async () => {
          const d = mkdtempSync(join(tmpdir(), 'sdesk-w-'));
          hostDirs.push(d);
          return d;
        },
      };
    }
  });
  afterAll(async () => {
    await t.dispose();
    for (const d of hostDirs) rmSync(d, { recursive: true, force: true });
  });

  const exec = (command: string, o: Record<string, unknown> = {}) => t.desk.exec({ sandbox: sb, command, ...o });

  describe.each(MODES)('mode %s', (mode) => {
    const run = (command: string, o: Record<string, unknown> = {}) => exec(command, { mode, ...o });

    it('reports the mode it ran in', async () => {
      expect((await run('true', { session: uniqueName('s') })).mode).toBe(mode);
    });

    it("two sessions cd to different directories and never see each other's", async () => {
      const w = await backend.scratch();
      await run(`mkdir -p ${w}/a ${w}/b`);
      const a = uniqueName('a');
      const b = uniqueName('b');
      expect((await run(`cd ${w}/a`, { session: a })).cwd).toBe(`${w}/a`);
      expect((await run(`cd ${w}/b`, { session: b })).cwd).toBe(`${w}/b`);
      expect((await run('pwd', { session: a })).stdout).toBe(`${w}/a\n`);
      expect((await run('pwd', { session: b })).stdout).toBe(`${w}/b\n`);
      // A third session never inherits the environment's last observed cwd (b's).
      const c = await run('pwd', { session: uniqueName('c') });
      expect(c.cwdSource).toBe('default');
      expect(c.stdout).not.toBe(`${w}/b\n`);
    });

    it('rm -rf of the directory a session stands in: the next command runs in the ancestor, warning "missing on disk"', async () => {
      const w = await backend.scratch();
      const s = uniqueName('s');
      await run(`mkdir -p ${w}/proj && cd ${w}/proj`, { session: s });
      const del = await run(`rm -rf ${w}/proj`, { session: s });
      expect(del.exitCode).toBe(0);
      expect(del.cwdObserved).toBe(false);
      expect(del.warnings.map((x) => x.code)).toContain('cwd_deleted');
      const next = await run('pwd', { session: s });
      expect(next.stdout).toBe(`${w}\n`);
      expect(next.cwd).toBe(w);
      const warn = next.warnings.find((x) => x.code === 'cwd_missing');
      expect(warn?.message).toMatch(/missing on disk/);
      expect(warn).toMatchObject({ asked: `${w}/proj`, used: w });
      // The record moved to the ancestor that was measured, so the warning does not repeat forever.
      const again = await run('pwd', { session: s });
      expect(again.warnings).toEqual([]);
      expect(t.desk.listSessions(sb).find((x) => x.key === s)?.cwd).toBe(w);
    });

    it('a path that is a file is not enterable', async () => {
      const w = await backend.scratch();
      await run(`touch ${w}/file`);
      const r = await run('pwd', { workdir: `${w}/file` });
      expect(r.stdout).toBe(`${w}\n`);
      expect(r.warnings.map((x) => x.code)).toContain('cwd_not_directory');
    });

    it.runIf(backendName === 'docker' || isRoot)(
      'a 0700 directory owned by root is not entered by a non-root user: "not accessible to this user"',
      async () => {
        const w = await backend.scratch();
        await exec(`mkdir -p ${w}/locked && chown root:root ${w}/locked && chmod 0700 ${w}/locked && chmod 0755 ${w}`, {
          user: backend.rootUser,
          session: '__root',
        });
        const r = await run('pwd; id -un', { workdir: `${w}/locked`, user: backend.plainUser, session: uniqueName('p') });
        expect(r.stdout.split('\n')[0]).toBe(w);
        expect(r.stdout.split('\n')[1]).not.toBe('root');
        const warn = r.warnings.find((x) => x.code === 'cwd_denied');
        expect(warn?.message).toMatch(/not accessible to this user/);
        expect(warn).toMatchObject({ asked: `${w}/locked`, used: w });
        // Existence is not enterability: root can enter it.
        const asRoot = await run('pwd', { workdir: `${w}/locked`, user: backend.rootUser, session: uniqueName('r') });
        expect(asRoot.stdout).toBe(`${w}/locked\n`);
      },
    );

    it('a timed-out `cd /x && sleep 60` leaves the record unchanged and cwdObserved false, even after another session moved the environment', async () => {
      const w = await backend.scratch();
      await run(`mkdir -p ${w}/mine ${w}/theirs ${w}/x`);
      const mine = uniqueName('mine');
      await run(`cd ${w}/mine`, { session: mine });
      await run(`cd ${w}/theirs`, { session: uniqueName('theirs') });
      // A sleep of its own length: the check below counts this test's sleep, never another one on the host.
      const nap = `sleep 60.${String(Date.now() % 1e6).padStart(6, '0')}${Math.floor(Math.random() * 1e6)}`;
      const r = await run(`cd ${w}/x && ${nap}`, { session: mine, timeoutSeconds: 1 });
      expect(r).toMatchObject({ timedOut: true, cwdObserved: false, cwd: null, exitCode: 124 });
      expect(r.warnings.map((x) => x.code)).toContain('cwd_unobserved');
      expect(r.durationMs).toBeLessThan(15_000);
      expect(t.desk.listSessions(sb).find((x) => x.key === mine)?.cwd).toBe(`${w}/mine`);
      expect((await run('pwd', { session: mine })).stdout).toBe(`${w}/mine\n`);
      // The sleep was really ended inside the sandbox, not just abandoned.
      const ps = await run(`for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -cxF '${nap} ' || true`);
      expect(ps.stdout.trim()).toBe('0');
    });

    it('an interrupt (abort) is unobserved like a timeout', async () => {
      const s = uniqueName('s');
      const ctl = new AbortController();
      setTimeout(() => ctl.abort(), 300);
      const r = await t.desk.exec({ sandbox: sb, command: 'cd / && sleep 30', session: s, mode, signal: ctl.signal });
      expect(r).toMatchObject({ interrupted: true, cwdObserved: false, exitCode: 130 });
      expect(t.desk.listSessions(sb).find((x) => x.key === s)?.cwd).toBeNull();
    });

    it('an explicit workdir is used for that command only, unless the command itself cds', async () => {
      const w = await backend.scratch();
      await run(`mkdir -p ${w}/home ${w}/once ${w}/once/sub`);
      const s = uniqueName('s');
      await run(`cd ${w}/home`, { session: s });
      const once = await run('pwd', { session: s, workdir: `${w}/once` });
      expect(once).toMatchObject({ stdout: `${w}/once\n`, cwdSource: 'workdir', cwd: `${w}/once` });
      expect((await run('pwd', { session: s })).stdout).toBe(`${w}/home\n`);
      await run('cd sub', { session: s, workdir: `${w}/once` });
      expect((await run('pwd', { session: s })).stdout).toBe(`${w}/once/sub\n`);
    });

    it('a relative workdir is resolved against the session cwd, and the result says so', async () => {
      const w = await backend.scratch();
      await run(`mkdir -p ${w}/rel/inner`);
      const s = uniqueName('s');
      await run(`cd ${w}/rel`, { session: s });
      const r = await run('pwd', { session: s, workdir: 'inner' });
      expect(r.stdout).toBe(`${w}/rel/inner\n`);
      expect(r.warnings.find((x) => x.code === 'workdir_relative')).toMatchObject({ asked: 'inner', used: `${w}/rel/inner` });
    });

    it('a command that prints a fake marker does not move the record', async () => {
      const s = uniqueName('s');
      await run('cd /', { session: s });
      const fake = 'printf "deadbeef:E:0:ok:/etc:deadbeef\\n"; printf "x:E:0:ok:/usr:x\\n" >&2';
      const r = await run(fake, { session: s });
      expect(r.stdout).toBe('deadbeef:E:0:ok:/etc:deadbeef\n');
      expect(r.cwd).toBe('/');
      expect(t.desk.listSessions(sb).find((x) => x.key === s)?.cwd).toBe('/');
    });

    it('a command that closes stdout, or execs into another program, is handled', async () => {
      const s = uniqueName('s');
      const closed = await run('cd / && echo before && exec 1>&- && echo after', { session: s });
      expect(closed.stdout).toBe('before\n');
      expect(closed.cwd).toBe('/');
      const next = await run('echo still-works; pwd', { session: s });
      expect(next.stdout).toBe('still-works\n/\n');
      const replaced = await run('exec echo replaced', { session: s });
      expect(replaced).toMatchObject({ stdout: 'replaced\n', exitCode: 0, cwdObserved: false });
      expect((await run('pwd', { session: s })).stdout).toBe('/\n');
    });

    it('binary output comes back byte for byte', async () => {
      const r = await run(`printf '\\000\\001\\377\\376abc\\n\\200'`);
      expect([...r.stdoutBytes]).toEqual([0, 1, 255, 254, 97, 98, 99, 10, 128]);
    });

    it('50 MB of output: bounded memory, truncated with a flag, cwd still observed', async () => {
      const r = await run('head -c 50000000 /dev/zero | tr "\\0" x; cd /', { maxOutputBytes: 1024 * 1024, session: uniqueName('big') });
      expect(r.stdoutBytes.length).toBe(1024 * 1024);
      expect(r.truncated.stdout).toBe(true);
      expect(r.warnings.map((x) => x.code)).toContain('output_truncated');
      expect(r.cwd).toBe('/');
    });

    it('counts Permission denied / Operation not permitted lines even when the exit code is 0', async () => {
      const w = await backend.scratch();
      const r = await run(
        `echo "ls: cannot open directory '${w}': Permission denied" >&2; echo "touch: x: Operation not permitted" >&2; echo fine >&2; true`,
      );
      expect(r).toMatchObject({ exitCode: 0, deniedCount: 2 });
    });

    it('exit codes pass through', async () => {
      expect((await run('exit 7')).exitCode).toBe(7);
      expect((await run('false')).exitCode).toBe(1);
    });
  });

  it('shell mode: a command that ignores the interrupt gets its shell killed and replaced; the next command works', async () => {
    const s = uniqueName('stubborn');
    const pidFile = `/tmp/${uniqueName('spin')}.pid`;
    await exec('cd /', { session: s, mode: 'shell' });
    // A builtin loop in the session shell itself, deaf to TERM: nothing but replacing the shell ends it.
    const r = await exec(`echo $$ > ${pidFile}; trap '' TERM INT; cd /tmp; while :; do :; done`, {
      session: s,
      mode: 'shell',
      timeoutSeconds: 1,
    });
    expect(r).toMatchObject({ timedOut: true, cwdObserved: false, exitCode: 124 });
    const next = await exec('pwd', { session: s, mode: 'shell' });
    expect(next).toMatchObject({ stdout: '/\n', cwdObserved: true });
    const gone = await exec(`kill -0 $(cat ${pidFile}) 2>/dev/null && echo alive || echo gone; rm -f ${pidFile}`);
    expect(gone.stdout).toBe('gone\n');
  });

  it('a step request with no resolvable cwd is refused before anything runs; with a cwd it runs', async () => {
    const w = await backend.scratch();
    const step = uniqueName('step');
    const err = await exec(`touch ${w}/ran`, { session: step, stepId: 'step-1' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxDeskError);
    expect((err as SandboxDeskError).code).toBe('cwd_unresolved');
    expect((await exec(`test -e ${w}/ran && echo yes || echo no`)).stdout).toBe('no\n');
    expect(t.desk.listSessions(sb).find((x) => x.key === step)).toBeUndefined();
    // Callers without step ownership keep the default.
    expect((await exec('true', { session: step })).cwdSource).toBe('default');
    // A step with an explicit workdir, or a session created with a cwd, runs.
    expect((await exec('pwd', { session: uniqueName('st'), stepId: 'step-2', workdir: w })).stdout).toBe(`${w}\n`);
    t.desk.createSession({ sandbox: sb, key: 'run-folder', cwd: w });
    expect((await exec('pwd', { session: 'run-folder', stepId: 'step-3' })).stdout).toBe(`${w}\n`);
  });

  it('a child session receives its cwd at creation, from its parent, and never looks the parent up again', async () => {
    const w = await backend.scratch();
    await exec(`mkdir -p ${w}/p ${w}/later`);
    const parent = uniqueName('parent');
    await exec(`cd ${w}/p`, { session: parent });
    const child = uniqueName('child');
    const first = await exec('pwd', { session: child, parent, stepId: 'delegated' });
    expect(first).toMatchObject({ stdout: `${w}/p\n`, cwdSource: 'created' });
    await exec(`cd ${w}/later`, { session: parent });
    expect((await exec('pwd', { session: child })).stdout).toBe(`${w}/p\n`);
    await exec('cd /', { session: child });
    expect((await exec('pwd', { session: parent })).stdout).toBe(`${w}/later\n`);
    const listed = t.desk.listSessions(sb).find((x) => x.key === child);
    expect(listed?.parent).toBe(parent);
    // Through session create as well.
    const viaCreate = t.desk.createSession({ sandbox: sb, key: uniqueName('kid'), parent });
    expect(viaCreate.cwd).toBe(`${w}/later`);
  });

  it('session keys with odd characters are stored and used verbatim', async () => {
    const keys = ['a/b', "x'; DROP TABLE sessions;--", 'emoji 🚀 key', ' spaced ', 'default-ish\\n'];
    for (const [i, key] of keys.entries()) {
      await exec(i % 2 ? 'cd /' : 'cd /tmp', { session: key });
    }
    const listed = t.desk.listSessions(sb);
    for (const [i, key] of keys.entries()) {
      expect(listed.find((x) => x.key === key)?.cwd).toBe(i % 2 ? '/' : '/tmp');
    }
    t.desk.removeSession(sb, keys[1]!);
    expect(t.desk.listSessions(sb).find((x) => x.key === keys[1])).toBeUndefined();
  });

  it('shell state does not leak between sessions', async () => {
    await exec('export SECRET_OF_A=1; f() { echo fa; }', { session: 'leak-a' });
    const b = await exec('echo "[${SECRET_OF_A:-}]"; type f >/dev/null 2>&1 && echo has-f || echo no-f', { session: 'leak-b' });
    expect(b.stdout).toBe('[]\nno-f\n');
  });

  it('shell and one-shot give the same results, byte for byte', async () => {
    const w = await backend.scratch();
    await exec(`mkdir -p ${w}/same && chmod 755 ${w}/same`);
    const commands = [`cd ${w}/same && printf 'a\\nb'`, 'echo out; echo err >&2; exit 3', `cd ${w}/nope`, 'printf "\\001\\002"', `pwd`];
    for (const command of commands) {
      const s1 = uniqueName('s');
      const s2 = uniqueName('o');
      const a = await exec(command, { session: s1, mode: 'shell', workdir: w });
      const b = await exec(command, { session: s2, mode: 'oneshot', workdir: w });
      expect(a.stdoutBytes.equals(b.stdoutBytes), command).toBe(true);
      expect(a.stderrBytes.equals(b.stderrBytes), command).toBe(true);
      expect([a.exitCode, a.cwd, a.cwdObserved, a.startCwd, a.warnings], command).toEqual([
        b.exitCode,
        b.cwd,
        b.cwdObserved,
        b.startCwd,
        b.warnings,
      ]);
    }
  });

  it('records survive an app restart', async () => {
    const w = await backend.scratch();
    const s = uniqueName('s');
    await exec(`cd ${w}`, { session: s });
    const again = t.reopen();
    expect(again.listSessions(sb).find((x) => x.key === s)?.cwd).toBe(w);
    expect((await again.exec({ sandbox: sb, command: 'pwd', session: s })).stdout).toBe(`${w}\n`);
    await again.close();
  });
});

describe('cwd engine: container-only rules', () => {
  let t: TestDesk;
  let sb: string;
  let hostProject: string;
  beforeAll(async () => {
    t = tempDesk();
    sb = uniqueName('cwdc');
    hostProject = mkdtempSync(join(tmpdir(), 'sdesk-host-project-'));
    chmodSync(hostProject, 0o777);
    await t.desk.createSandbox({
      name: sb,
      backend: 'docker',
      defaultCwd: '~',
      mounts: [{ hostPath: hostProject, sandboxPath: '/workspace' }],
    });
  }, 120_000);
  afterAll(async () => {
    await t.dispose();
    rmSync(hostProject, { recursive: true, force: true });
  });

  it('a host path recorded on a docker sandbox is dropped with a warning; the default is used', async () => {
    for (const hostPath of ['/Users/me/project', 'C:\\Users\\me\\project', `${process.env.HOME ?? '/root'}/checkout`]) {
      const key = uniqueName('h');
      t.desk.createSession({ sandbox: sb, key, cwd: hostPath.startsWith('/') ? hostPath : '/placeholder' });
      if (!hostPath.startsWith('/')) t.desk.store.sessions.recordObserved(sb, key, hostPath, new Date().toISOString());
      // A step in that situation fails closed…
      const err = await t.desk.exec({ sandbox: sb, command: 'pwd', session: key, stepId: 's' }).catch((e: unknown) => e);
      expect((err as SandboxDeskError).code).toBe('cwd_unresolved');
      // …anyone else runs in the default, told why.
      const r = await t.desk.exec({ sandbox: sb, command: 'pwd', session: key });
      expect(r.stdout, hostPath).toBe('/home/agent\n');
      expect(r.warnings.find((x) => x.code === 'host_path_dropped')?.asked).toBe(hostPath);
    }
  });

  it('a path under the declared home is kept even though it looks like /home/…', async () => {
    await t.desk.exec({ sandbox: sb, command: 'mkdir -p /home/agent/project && cd /home/agent/project', session: 'homey' });
    const r = await t.desk.exec({ sandbox: sb, command: 'pwd', session: 'homey' });
    expect(r).toMatchObject({ stdout: '/home/agent/project\n', warnings: [] });
  });

  it('a host path under a declared mount is translated', async () => {
    mkdirSync(join(hostProject, 'src'), { mode: 0o777 });
    t.desk.createSession({ sandbox: sb, key: 'mounted', cwd: `${hostProject}/src` });
    const r = await t.desk.exec({ sandbox: sb, command: 'pwd', session: 'mounted' });
    expect(r.warnings.find((x) => x.code === 'host_path_translated')).toMatchObject({
      asked: `${hostProject}/src`,
      used: '/workspace/src',
    });
    expect(r.stdout).toBe('/workspace/src\n');
  });

  it('records survive a container restart by the app', async () => {
    await t.desk.exec({ sandbox: sb, command: 'cd /etc', session: 'survivor' });
    await t.desk.stopSandbox(sb);
    await t.desk.startSandbox(sb);
    const r = await t.desk.exec({ sandbox: sb, command: 'pwd', session: 'survivor' });
    expect(r.stdout).toBe('/etc\n');
  });

  it("a restart behind the app's back: the record survives and the result says the sandbox was recreated", async () => {
    await t.desk.exec({ sandbox: sb, command: 'cd /usr', session: 'outside' });
    const id = (await t.desk.inspectSandbox(sb)).backendRef!;
    execFileSync('docker', ['restart', '-t', '0', id], { stdio: 'ignore' });
    const r = await t.desk.exec({ sandbox: sb, command: 'pwd', session: 'outside' });
    expect(r.stdout).toBe('/usr\n');
    expect(r.warnings.map((x) => x.code)).toContain('environment_recreated');
  });
});
