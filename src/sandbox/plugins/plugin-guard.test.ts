import { describe, expect, it } from 'vitest';
import { thrown } from '../../../test/expect-error.js';
import type { SandboxEnvironment, SandboxProvider } from '../provider.js';
import { ISOLATION_LABEL } from '../../shared/isolation.js';
import { isolationOf } from '../provider.js';
import { checkedPrefix, GuardedProvider } from './plugin-guard.js';

const WHO = 'backend x (plugin p)';

describe('checkedPrefix', () => {
  it('passes an argv array through as a copy', () => {
    const argv = ['podman', 'exec', '-i', 'c1'];
    const out = checkedPrefix(argv, WHO, true);
    expect(out).toEqual(argv);
    expect(out).not.toBe(argv);
  });
  it('a string is refused (never handed to a shell), naming the plugin', () => {
    const e = thrown(() => checkedPrefix('ssh host', WHO, true));
    expect(e.code).toBe('refused');
    expect(e.message).toMatch(/^backend x \(plugin p\): execPrefix returned a string/);
  });
  it('null is retryable; junk, NUL and an empty container argv are refused', () => {
    expect(thrown(() => checkedPrefix(null, WHO, true))).toMatchObject({ code: 'backend_unavailable' });
    expect(thrown(() => checkedPrefix(['a', 1], WHO, true)).code).toBe('refused');
    expect(thrown(() => checkedPrefix(['a\0b'], WHO, true)).message).toMatch(/NUL/);
    expect(thrown(() => checkedPrefix([], WHO, true)).message).toMatch(/run commands on the host/);
    expect(checkedPrefix([], WHO, false)).toEqual([]);
  });
});

describe('GuardedProvider', () => {
  const env = (over: Partial<SandboxEnvironment>): SandboxEnvironment => ({
    user: 'u',
    home: '/home/u',
    defaultCwd: '~',
    cwd: null,
    mounts: [],
    incarnation: 'i1',
    execPrefix: () => ['x'],
    getTempDir: () => '/tmp',
    ...over,
  });
  const provider = (over: Partial<SandboxProvider>) =>
    new GuardedProvider(
      {
        name: 'x',
        isContainer: true,
        defaultCwd: '~',
        supportsStreams: true,
        description: 'd',
        provision: async () => ({ backendRef: 'r', user: null, image: null }),
        start: async () => undefined,
        stop: async () => undefined,
        remove: async () => undefined,
        status: async () => ({ state: 'running', incarnation: 'i1' }),
        createEnvironment: async () => env({}),
        ...over,
      },
      'x',
      { plugin: 'p', timeouts: { shortMs: 50, longMs: 50 } },
    );

  it('resolves a "~" the plugin forgot to resolve, and checks the home', async () => {
    const e = await provider({}).createEnvironment({
      cwd: '~',
      sandbox: { name: 's', backendRef: 'r', image: null, user: null, mounts: [], env: {}, options: {} },
    });
    expect(e.defaultCwd).toBe('/home/u');
    await expect(
      provider({ createEnvironment: async () => env({ home: 'relative' }) }).createEnvironment({} as never),
    ).rejects.toMatchObject({ code: 'backend_unavailable', message: /home "relative" is not an absolute/ });
  });
  it('names the plugin in failures, times out hangs, and rejects malformed status', async () => {
    await expect(provider({ start: async () => Promise.reject(new Error('boom')) }).start({} as never)).rejects.toMatchObject({
      message: 'backend x (plugin p): start failed: boom',
    });
    await expect(provider({ status: () => new Promise(() => undefined) }).status({} as never)).rejects.toMatchObject({
      message: 'backend x (plugin p): status did not answer within 0 s',
    });
    await expect(provider({ status: async () => ({ state: 'up' }) as never }).status({} as never)).rejects.toMatchObject({
      message: /status returned \{"state":"up"\}/,
    });
    await expect(provider({ status: async () => ({ state: 'running', incarnation: null }) }).status({} as never)).rejects.toMatchObject({
      message: /running but gives no incarnation/,
    });
  });
  it('flags read defensively: a throwing getter reads as the safe value', () => {
    const p = provider({});
    Object.defineProperty(p.inner, 'supportsStreams', {
      get: () => {
        throw new Error('x');
      },
    });
    Object.defineProperty(p.inner, 'isContainer', {
      get: () => {
        throw new Error('x');
      },
    });
    expect([p.supportsStreams, p.isContainer]).toEqual([false, true]);
  });

  it("forwards a plugin's declared isolation (the ssh backend is a remote machine, not a container); an unknown one falls back", () => {
    expect(isolationOf(provider({ isolation: 'remote' }))).toBe('remote');
    expect(ISOLATION_LABEL[isolationOf(provider({ isolation: 'remote' }))]).toBe('remote machine');
    expect(isolationOf(provider({ isolation: 'moon-base' as never }))).toBe('container');
    expect(isolationOf(provider({}))).toBe('container');
  });
});
