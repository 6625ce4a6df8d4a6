import { userInfo } from 'node:os';
import { describe, expect, it } from 'vitest';
import { LocalProvider } from '../sandbox/local/local-provider.js';
import { TerminalSession } from './terminal.js';
import { useHermeticHome } from '../../test/hermetic-home.js';

useHermeticHome();

/** A real PTY with a real local login shell (the local backend's exec prefix is empty). */
async function open(target: string, scrollbackBytes?: number) {
  const env = await new LocalProvider().createEnvironment({
    cwd: '/tmp',
    sandbox: { name: 'l', backendRef: null, image: null, user: null, mounts: [], env: {}, options: {} },
  });
  const cwds: string[] = [];
  let out = '';
  const t = new TerminalSession(env, { target, cols: 80, rows: 24, scrollbackBytes });
  t.onCwd((c) => cwds.push(c));
  t.attach({ send: (d, done) => ((out += d.toString()), done()), bufferedAmount: 0 });
  return { t, cwds, screen: () => out };
}

describe('TerminalSession (real PTY, local bash)', () => {
  it('starts in the target, and every prompt reports the measured cwd', async () => {
    const { t, cwds } = await open('/tmp');
    await expect.poll(() => cwds.at(-1), { timeout: 10_000 }).toBe('/tmp');
    t.write('cd /usr/bin\r');
    await expect.poll(() => cwds.at(-1), { timeout: 10_000 }).toBe('/usr/bin');
    t.dispose();
  });

  it("a report printed by a program, without the terminal's nonce, changes nothing", async () => {
    const { t, cwds, screen } = await open('/');
    await expect.poll(() => cwds.length, { timeout: 10_000 }).toBeGreaterThan(0);
    const before = cwds.length;
    t.write("printf '\\033]7;file://sdesk-0000/etc\\007'; echo done-printing\r");
    await expect.poll(screen, { timeout: 10_000 }).toMatch(/done-printing\r\n/);
    await expect.poll(() => cwds.length, { timeout: 5_000 }).toBeGreaterThan(before);
    expect(cwds.slice(before).every((c) => c === '/')).toBe(true);
    t.dispose();
  });

  it('a target that is gone: starts in its nearest ancestor and says so', async () => {
    const { t, cwds, screen } = await open('/tmp/sdesk-surely-missing/deeper');
    await expect.poll(() => cwds.at(-1), { timeout: 10_000 }).toBe('/tmp');
    expect(screen()).toMatch(/is missing; starting in \/tmp/);
    t.dispose();
  });

  it('onExit fires once when the shell exits by itself, with its exit code', async () => {
    const { t, cwds } = await open('/tmp');
    await expect.poll(() => cwds.length, { timeout: 10_000 }).toBeGreaterThan(0);
    const exits: number[] = [];
    t.onExit((e) => exits.push(e.exitCode));
    t.write('exit 7\r');
    await expect.poll(() => exits, { timeout: 10_000 }).toEqual([7]);
    expect(t.exited).toBe(true);
    t.dispose();
    expect(exits).toEqual([7]);
  });

  it('dispose ends the shell and fires onExit', async () => {
    const { t, cwds } = await open('/tmp');
    await expect.poll(() => cwds.length, { timeout: 10_000 }).toBeGreaterThan(0);
    const ended = new Promise<unknown>((resolve) => t.onExit(resolve));
    t.dispose();
    await ended;
    expect(t.exited).toBe(true);
  });

  it('a viewer leaving does not end the shell; the next one gets the scrollback, then live output', async () => {
    const env = await new LocalProvider().createEnvironment({
      cwd: '/tmp',
      sandbox: { name: 'l', backendRef: null, image: null, user: null, mounts: [], env: {}, options: {} },
    });
    const t = new TerminalSession(env, { target: '/tmp', cols: 80, rows: 24 });
    const viewer = () => {
      let out = '';
      const sink = { send: (d: Buffer, done: () => void) => ((out += d.toString()), done()), bufferedAmount: 0 };
      return { sink, out: () => out };
    };
    const first = viewer();
    const detach = t.attach(first.sink);
    t.write('export SDESK_MARK=kept-$((6*7)); echo "pid=$$"\r');
    await expect.poll(first.out, { timeout: 10_000 }).toMatch(/pid=\d+/);
    const pid = /pid=(\d+)/.exec(first.out())![1];
    detach.dispose();
    expect(t.exited).toBe(false);
    expect(t.viewers).toBe(0);

    const second = viewer();
    t.attach(second.sink);
    // The replay: what the shell printed before this viewer came.
    expect(second.out()).toContain(`pid=${pid}`);
    t.write('echo "again=$$ $SDESK_MARK"\r');
    await expect.poll(second.out, { timeout: 10_000 }).toContain(`again=${pid} kept-42`);
    t.dispose();
  });

  it('two viewers at once: both see the output, either may type', async () => {
    const { t, screen } = await open('/tmp');
    let other = '';
    t.attach({ send: (d, done) => ((other += d.toString()), done()), bufferedAmount: 0 });
    expect(t.viewers).toBe(2);
    t.write('echo from-$((1+1))-a\r');
    await expect.poll(() => other, { timeout: 10_000 }).toMatch(/from-2-a/);
    t.write('echo from-$((2+1))-b\r');
    await expect.poll(screen, { timeout: 10_000 }).toMatch(/from-3-b/);
    await expect.poll(() => other, { timeout: 10_000 }).toMatch(/from-3-b/);
    t.dispose();
  });

  it('the scrollback is bounded by its setting', async () => {
    const { t, screen } = await open('/tmp', 4096);
    t.write('for i in $(seq 1 2000); do echo "row-$i"; done; echo flood-$((3+3))-done\r');
    await expect.poll(screen, { timeout: 20_000 }).toMatch(/flood-6-done\r\n/);
    expect(t.scrollbackBytes).toBeLessThanOrEqual(4096);
    let late = '';
    t.attach({ send: (d, done) => ((late += d.toString()), done()), bufferedAmount: 0 });
    expect(late).toContain('row-2000');
    expect(late).not.toContain('row-1\r\n');
    t.dispose();
  });

  it('a cwd report that arrives while the terminal is being disposed is dropped (its owner may be closing the store)', async () => {
    const { t, cwds } = await open('/tmp');
    await expect.poll(() => cwds.at(-1), { timeout: 10_000 }).toBe('/tmp');
    const ended = new Promise<unknown>((resolve) => t.onExit(resolve));
    // The prompt after `cd` comes back while dispose is still ending the process tree.
    t.write('cd /usr/bin\r');
    t.dispose();
    await ended;
    expect(cwds).not.toContain('/usr/bin');
  });

  it('reports its PID, and dispose ends its process tree by it (a job that ignores the hang-up too)', async () => {
    const { t, cwds, screen } = await open('/tmp');
    await expect.poll(() => cwds.length, { timeout: 10_000 }).toBeGreaterThan(0);
    t.write('echo "shell=$$"; (trap "" HUP; exec sleep 300) & echo "job=$!"\r');
    await expect.poll(screen, { timeout: 10_000 }).toMatch(/job=\d+\r\n/);
    expect(t.pid).toBe(Number(/shell=(\d+)/.exec(screen())![1]));
    const job = Number(/job=(\d+)\r\n/.exec(screen())![1]);
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    expect(alive(job)).toBe(true);
    const exited = new Promise((r) => t.onExit(r));
    t.dispose();
    await exited;
    await expect.poll(() => alive(job), { timeout: 10_000 }).toBe(false);
  });

  it("the login shell runs in this file's own home, not the host user's (whose rc files are the machine's state)", async () => {
    const { t, cwds, screen } = await open('/tmp');
    await expect.poll(() => cwds.length, { timeout: 10_000 }).toBeGreaterThan(0);
    t.write('echo "home=$HOME:"\r');
    await expect.poll(screen, { timeout: 10_000 }).toMatch(/home=[^\r\n]*:\r\n/);
    const home = /home=([^\r\n]*):\r\n/.exec(screen())![1];
    expect(home).toBe(process.env.HOME);
    expect(home).not.toBe(userInfo().homedir);
    t.dispose();
  });
});
