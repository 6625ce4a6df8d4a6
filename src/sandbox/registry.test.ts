import { describe, it, expect } from 'vitest';
import { thrown } from '../../test/expect-error.js';
import { BUILTIN_BACKENDS, ProviderRegistry } from './registry.js';
import type { SandboxProvider } from './provider.js';

function provider(name: string): SandboxProvider {
  const fail = (): Promise<never> => Promise.reject(new Error('not used in these tests'));
  return {
    name,
    isContainer: true,
    defaultCwd: undefined,
    supportsStreams: false,
    description: `fake ${name}`,
    provision: fail,
    start: fail,
    stop: fail,
    remove: fail,
    status: fail,
    createEnvironment: fail,
  };
}

describe('ProviderRegistry', () => {
  describe('register (plugin providers)', () => {
    it('registers a provider with a valid name and finds it again', () => {
      const r = new ProviderRegistry();
      const p = provider('my-plugin_2');
      r.register(p);
      expect(r.get('my-plugin_2')).toBe(p);
      expect(r.has('my-plugin_2')).toBe(true);
    });

    it.each(BUILTIN_BACKENDS.map((n) => [n]))('refuses the reserved built-in name %s', (name) => {
      const err = thrown(() => new ProviderRegistry().register(provider(name)));
      expect(err.code).toBe('refused');
      expect(err.message).toContain('reserved');
      expect(err.message).toContain(name);
    });

    it('reserves qemu even before a qemu backend is registered', () => {
      const r = new ProviderRegistry();
      expect(thrown(() => r.register(provider('qemu'))).code).toBe('refused');
      expect(r.has('qemu')).toBe(false);
    });

    it.each([
      ['empty', ''],
      ['with a space and capitals', 'Bad Name'],
      ['with a slash', 'a/b'],
      ['with capitals only', 'Docker'],
      ['starting with a dash', '-x'],
      ['starting with an underscore', '_x'],
      ['longer than 32 characters', 'a'.repeat(33)],
      ['with a dot', 'a.b'],
    ])('refuses a name %s as invalid_input', (_label, name) => {
      const err = thrown(() => new ProviderRegistry().register(provider(name)));
      expect(err.code).toBe('invalid_input');
      expect(err.hint).toBeTruthy();
    });

    it('refuses a provider whose name is not a string', () => {
      const p = { ...provider('x'), name: 42 as unknown as string };
      expect(thrown(() => new ProviderRegistry().register(p)).code).toBe('invalid_input');
    });

    it('accepts a 32-character name', () => {
      const r = new ProviderRegistry();
      r.register(provider('a'.repeat(32)));
      expect(r.names()).toEqual(['a'.repeat(32)]);
    });

    it('refuses a duplicate name with name_taken and keeps the first provider', () => {
      const r = new ProviderRegistry();
      const first = provider('plug');
      r.register(first);
      expect(thrown(() => r.register(provider('plug'))).code).toBe('name_taken');
      expect(r.get('plug')).toBe(first);
    });
  });

  describe('registerBuiltin', () => {
    it('registers the built-in backends', () => {
      const r = new ProviderRegistry();
      r.registerBuiltin(provider('local'));
      r.registerBuiltin(provider('docker'));
      expect(r.names()).toEqual(['local', 'docker']);
    });

    it('refuses a name that is not built in', () => {
      expect(thrown(() => new ProviderRegistry().registerBuiltin(provider('plug'))).code).toBe('invalid_input');
    });

    it('makes a later plugin with a built-in name fail as refused', () => {
      const r = new ProviderRegistry();
      const docker = provider('docker');
      r.registerBuiltin(docker);
      expect(thrown(() => r.register(provider('docker'))).code).toBe('refused');
      expect(r.get('docker')).toBe(docker);
    });
  });

  describe('get', () => {
    it('throws unknown_backend for an unknown name, with a hint listing the registered names', () => {
      const r = new ProviderRegistry();
      r.registerBuiltin(provider('local'));
      r.register(provider('plug'));
      const err = thrown(() => r.get('nope'));
      expect(err.code).toBe('unknown_backend');
      expect(err.message).toContain('nope');
      expect(err.hint).toContain('local');
      expect(err.hint).toContain('plug');
    });

    it('suggests the near name first, in the one did-you-mean style ("dokcer" → docker)', () => {
      const r = new ProviderRegistry();
      r.registerBuiltin(provider('local'));
      r.registerBuiltin(provider('docker'));
      const err = thrown(() => r.get('dokcer'));
      expect(err.oneLine()).toBe("unknown backend 'dokcer' — did you mean docker? (available backends: local, docker)");
    });

    it('is case-sensitive', () => {
      const r = new ProviderRegistry();
      r.register(provider('plug'));
      expect(thrown(() => r.get('PLUG')).code).toBe('unknown_backend');
    });
  });

  describe('names, has, all', () => {
    it('lists providers in registration order', () => {
      const r = new ProviderRegistry();
      const a = provider('docker');
      const b = provider('zeta');
      const c = provider('alpha');
      r.registerBuiltin(a);
      r.register(b);
      r.register(c);
      expect(r.names()).toEqual(['docker', 'zeta', 'alpha']);
      expect(r.all()).toEqual([a, b, c]);
    });

    it('has() is false for unknown names', () => {
      expect(new ProviderRegistry().has('docker')).toBe(false);
    });
  });
});
