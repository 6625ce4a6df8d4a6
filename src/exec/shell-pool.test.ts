import { afterEach, describe, expect, it } from 'vitest';
import { LocalProvider } from '../sandbox/local/local-provider.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { DisposableStore } from '../shared/lifecycle.js';
import { SessionShell } from './session-shell.js';
import { ShellPool } from './shell-pool.js';

async function localEnv(): Promise<SandboxEnvironment> {
  return new LocalProvider().createEnvironment({
    cwd: '/tmp',
    sandbox: { name: 'l', backendRef: null, image: null, user: null, mounts: [], env: {}, options: {} },
  });
}

const req = (command: string) => ({ target: '/tmp', tmpDir: '/tmp', command, timeoutMs: 10_000, maxOutputBytes: 1 << 20 });

describe('ShellPool (real local bash)', () => {
  let pool: ShellPool | null = null;
  afterEach(() => pool?.closeAll());

  it('one shell per (sandbox, session, user), reused across commands', async () => {
    pool = new ShellPool({ idleMs: 60_000 });
    const env = await localEnv();
    const a1 = await pool.acquire('s', 'a', undefined, env);
    const a2 = await pool.acquire('s', 'a', undefined, env);
    const b = await pool.acquire('s', 'b', undefined, env);
    expect(a1.shell).toBe(a2.shell);
    expect(b.shell).not.toBe(a1.shell);
    expect(pool.size).toBe(2);
  });

  it('adopt: a shell opened ahead becomes the session’s (its first command runs in it, in the directory it names); refused for another incarnation, another exec prefix or a session that has one', async () => {
    const scopes = new Map<SandboxEnvironment, DisposableStore>();
    pool = new ShellPool({ idleMs: 60_000, scopeOf: (e) => scopes.get(e) ?? null });
    const env = await localEnv();
    scopes.set(env, new DisposableStore());
    const prefix = env.execPrefix({ interactive: false })!;
    const ahead = await SessionShell.open(env, undefined);
    const other = Object.assign(Object.create(env) as SandboxEnvironment, { incarnation: 'next' });
    expect(pool.adopt('s', 'a', undefined, other, ahead, prefix)).toBe(false);
    expect(pool.adopt('s', 'a', undefined, env, ahead, [...prefix, 'sudo'])).toBe(false);
    expect(pool.hasLive('s', 'a', undefined)).toBe(false);
    expect(pool.adopt('s', 'a', undefined, env, ahead, prefix)).toBe(true);
    expect(pool.hasLive('s', 'a', undefined)).toBe(true);
    const got = await pool.acquire('s', 'a', undefined, env);
    expect(got).toEqual({ shell: ahead, dropped: null });
    expect((await got.shell.run(req('pwd'))).end).toMatchObject({ exitCode: 0, cwd: '/tmp' });
    // A session that has its shell keeps it.
    const second = await SessionShell.open(env, undefined);
    expect(pool.adopt('s', 'a', undefined, env, second, prefix)).toBe(false);
    second.close();
    // Adopted means registered in the incarnation's store: it ends with it.
    scopes.get(env)!.dispose();
    expect(pool.hasLive('s', 'a', undefined)).toBe(false);
  });

  it('closes shells idle for longer than the configured time, never a busy one', async () => {
    pool = new ShellPool({ idleMs: 300 });
    const env = await localEnv();
    const idle = (await pool.acquire('s', 'idle', undefined, env)).shell;
    const busy = (await pool.acquire('s', 'busy', undefined, env)).shell;
    const running = busy.run(req('sleep 2'));
    await new Promise((r) => setTimeout(r, 600));
    pool.closeIdle();
    expect(pool.hasLive('s', 'idle', undefined)).toBe(false);
    expect(pool.hasLive('s', 'busy', undefined)).toBe(true);
    await new Promise((r) => setTimeout(r, 100));
    expect(idle.alive).toBe(false);
    expect((await running).end?.exitCode).toBe(0);
  });

  it('drops a shell of an earlier incarnation and says which cwd it last knew', async () => {
    pool = new ShellPool({ idleMs: 60_000 });
    const env = await localEnv();
    const first = (await pool.acquire('s', 'a', undefined, env)).shell;
    await first.run(req('cd /'));
    const reborn = Object.assign(Object.create(env) as SandboxEnvironment, { incarnation: 'next' });
    const again = await pool.acquire('s', 'a', undefined, reborn);
    expect(again.shell).not.toBe(first);
    expect(again.dropped).toEqual({ sandbox: 's', session: 'a', lastCwd: '/' });
  });

  it("a shell registers in its incarnation's store: disposing the store closes it, and the session's next shell says it was dropped", async () => {
    const scopes = new Map<SandboxEnvironment, DisposableStore>();
    pool = new ShellPool({ idleMs: 60_000, scopeOf: (e) => scopes.get(e) ?? null });
    const env = await localEnv();
    scopes.set(env, new DisposableStore());
    const first = (await pool.acquire('s', 'a', undefined, env)).shell;
    await first.run(req('cd /usr'));
    expect(scopes.get(env)!.size).toBe(1);
    scopes.get(env)!.dispose();
    expect(pool.hasLive('s', 'a', undefined)).toBe(false);
    await expect.poll(() => first.alive, { timeout: 5_000 }).toBe(false);

    const reborn = Object.assign(Object.create(env) as SandboxEnvironment, { incarnation: 'next' });
    scopes.set(reborn, new DisposableStore());
    const again = await pool.acquire('s', 'a', undefined, reborn);
    expect(again.shell).not.toBe(first);
    expect(again.dropped).toEqual({ sandbox: 's', session: 'a', lastCwd: '/usr' });
    // Said once only.
    expect((await pool.acquire('s', 'a', undefined, reborn)).dropped).toBeNull();
  });

  it('closeFor forgets a retired shell, and a shell closed otherwise leaves its store', async () => {
    const scope = new DisposableStore();
    pool = new ShellPool({ idleMs: 60_000, scopeOf: () => scope });
    const env = await localEnv();
    await pool.acquire('s', 'a', undefined, env);
    await pool.acquire('s', 'b', undefined, env);
    pool.closeFor('s', 'b');
    expect(scope.size).toBe(1);
    scope.dispose();
    pool.closeFor('s');
    const reborn = Object.assign(Object.create(env) as SandboxEnvironment, { incarnation: 'next' });
    expect((await pool.acquire('s', 'a', undefined, reborn)).dropped).toBeNull();
  });

  it('a shell swept because it died is remembered: reported to a command in a new incarnation, not in the same one', async () => {
    pool = new ShellPool({ idleMs: 60_000 });
    const env = await localEnv();
    const first = (await pool.acquire('s', 'a', undefined, env)).shell;
    // The command entered /tmp (its target) before it ended the shell: the last cwd the shell knew.
    void first.run(req('exit'));
    await expect.poll(() => first.alive, { timeout: 5_000 }).toBe(false);
    pool.closeIdle();
    expect(pool.size).toBe(0);
    const reborn = Object.assign(Object.create(env) as SandboxEnvironment, { incarnation: 'next' });
    expect((await pool.acquire('s', 'a', undefined, reborn)).dropped).toEqual({ sandbox: 's', session: 'a', lastCwd: '/tmp' });

    const second = (await pool.acquire('s', 'b', undefined, env)).shell;
    void second.run(req('exit'));
    await expect.poll(() => second.alive, { timeout: 5_000 }).toBe(false);
    pool.closeIdle();
    expect((await pool.acquire('s', 'b', undefined, env)).dropped).toBeNull();
  });
});
