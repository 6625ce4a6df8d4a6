import { afterEach, describe, expect, it } from 'vitest';
import { LocalProvider } from '../sandbox/local/local-provider.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';
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
});
