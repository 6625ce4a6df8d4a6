import { describe, it, expect } from 'vitest';
import { normalizeDeclaredCwd, readProviderDefaultCwd } from './declared-default-cwd.js';

const container = { isContainer: true, hostHome: '/root', origin: '--default-cwd', fallback: '"~"' };
const local = { isContainer: false, hostHome: '/root', origin: '--default-cwd', fallback: '"~"' };

describe('normalizeDeclaredCwd', () => {
  describe('nothing declared', () => {
    it.each([
      ['undefined', undefined],
      ['an empty string', ''],
      ['null', null],
    ])('returns value undefined and no warning for %s', (_label, raw) => {
      const d = normalizeDeclaredCwd(raw, container);
      expect(d.value).toBeUndefined();
      expect(d.warning).toBeUndefined();
    });
  });

  describe('accepted values', () => {
    it('keeps "~" on a container backend', () => {
      expect(normalizeDeclaredCwd('~', container)).toEqual({ value: '~' });
    });

    it('keeps "~" on a non-container backend', () => {
      expect(normalizeDeclaredCwd('~', local)).toEqual({ value: '~' });
    });

    it('normalises an absolute path', () => {
      expect(normalizeDeclaredCwd('/workspace/./a/../b/', container)).toEqual({ value: '/workspace/b' });
    });

    it('keeps "/" as "/"', () => {
      expect(normalizeDeclaredCwd('/', container)).toEqual({ value: '/' });
    });

    it('keeps a host-shaped path on a non-container backend', () => {
      expect(normalizeDeclaredCwd('/home/me/proj', local)).toEqual({ value: '/home/me/proj' });
      expect(normalizeDeclaredCwd('/root/proj', local)).toEqual({ value: '/root/proj' });
    });
  });

  describe('ignored values', () => {
    it('ignores a relative path with a default_cwd_ignored warning naming what was asked and used', () => {
      const d = normalizeDeclaredCwd('proj', { ...container, fallback: '/home/agent' });
      expect(d.value).toBeUndefined();
      expect(d.warning).toMatchObject({ code: 'default_cwd_ignored', asked: 'proj', used: '/home/agent' });
      expect(d.warning?.message).toContain('"proj"');
      expect(d.warning?.message).toContain('/home/agent');
      expect(d.warning?.message).toContain('--default-cwd');
    });

    it('ignores a relative path on a non-container backend, explaining it would be anchored on the host', () => {
      const d = normalizeDeclaredCwd('proj', local);
      expect(d.value).toBeUndefined();
      expect(d.warning?.code).toBe('default_cwd_ignored');
      expect(d.warning?.message).toContain('host');
    });

    it('ignores "~/x" (only a bare "~" is accepted)', () => {
      const d = normalizeDeclaredCwd('~/x', local);
      expect(d.value).toBeUndefined();
      expect(d.warning).toMatchObject({ code: 'default_cwd_ignored', asked: '~/x' });
    });

    it('does not throw for a relative path', () => {
      expect(() => normalizeDeclaredCwd('../etc', container)).not.toThrow();
    });

    it.each([['/Users/me/proj'], ['C:\\proj'], ['\\\\server\\share']])('ignores the host-only path %s on a container backend', (raw) => {
      const d = normalizeDeclaredCwd(raw, container);
      expect(d.value).toBeUndefined();
      expect(d.warning).toMatchObject({ code: 'default_cwd_ignored', asked: raw, used: '"~"' });
    });

    it.each([['/home/me/proj'], ['/root/proj']])('keeps %s until the sandbox home is known (it may be that home)', (raw) => {
      expect(normalizeDeclaredCwd(raw, container)).toEqual({ value: raw });
    });

    it.each([['/home/me/proj'], ['/root/proj']])('ignores %s once the measured home shows it is a host path', (raw) => {
      const d = normalizeDeclaredCwd(raw, { ...container, sandboxHome: '/home/agent' });
      expect(d.value).toBeUndefined();
      expect(d.warning).toMatchObject({ code: 'default_cwd_ignored', asked: raw });
    });

    it('keeps /home/me/proj when /home/me is the sandbox home', () => {
      expect(normalizeDeclaredCwd('/home/me/proj', { ...container, sandboxHome: '/home/me' })).toEqual({ value: '/home/me/proj' });
    });

    it('explains that a host path does not exist inside a container', () => {
      const d = normalizeDeclaredCwd('/Users/me/proj', container);
      expect(d.warning?.message).toContain('host path');
    });

    it.each([
      ['a number', 42, '42'],
      ['a boolean', true, 'true'],
      ['an array', ['/a'], '["/a"]'],
    ])('ignores %s with a warning', (_label, raw, asked) => {
      const d = normalizeDeclaredCwd(raw, container);
      expect(d.value).toBeUndefined();
      expect(d.warning).toMatchObject({ code: 'default_cwd_ignored', asked });
      expect(d.warning?.message).toContain('not a string');
    });

    it('ignores a plain object with a warning', () => {
      const d = normalizeDeclaredCwd({ path: '/a' }, container);
      expect(d.value).toBeUndefined();
      expect(d.warning?.code).toBe('default_cwd_ignored');
    });

    it('ignores a path containing a NUL byte', () => {
      const d = normalizeDeclaredCwd('/work\0space', container);
      expect(d.value).toBeUndefined();
      expect(d.warning).toMatchObject({ code: 'default_cwd_ignored', asked: '/work\0space' });
      expect(d.warning?.message).toContain('NUL or newline');
    });

    it('ignores a path containing a newline', () => {
      const d = normalizeDeclaredCwd('/work\nspace', local);
      expect(d.value).toBeUndefined();
      expect(d.warning?.code).toBe('default_cwd_ignored');
    });

    it('names the origin in the warning message', () => {
      const d = normalizeDeclaredCwd('rel', { ...container, origin: 'backend qemu defaultCwd' });
      expect(d.warning?.message.startsWith('backend qemu defaultCwd')).toBe(true);
    });
  });
});

describe('readProviderDefaultCwd', () => {
  it('returns the value of a plain defaultCwd', () => {
    expect(readProviderDefaultCwd({ name: 'p', defaultCwd: '/w' })).toEqual({ raw: '/w' });
  });

  it('returns undefined without error when nothing is declared', () => {
    expect(readProviderDefaultCwd({ name: 'p', defaultCwd: undefined })).toEqual({ raw: undefined });
  });

  it('turns a throwing getter into raw undefined and an error naming the backend and the message', () => {
    const provider = {
      name: 'broken',
      get defaultCwd(): unknown {
        throw new Error('kaboom');
      },
    };
    const r = readProviderDefaultCwd(provider);
    expect(r.raw).toBeUndefined();
    expect(r.error).toContain('broken');
    expect(r.error).toContain('kaboom');
  });

  it('handles a getter that throws a non-Error value', () => {
    const provider = {
      name: 'weird',
      get defaultCwd(): unknown {
        throw 'a string';
      },
    };
    const r = readProviderDefaultCwd(provider);
    expect(r.raw).toBeUndefined();
    expect(r.error).toContain('a string');
  });

  it('calls the getter on every read', () => {
    let n = 0;
    const provider = {
      name: 'p',
      get defaultCwd(): unknown {
        n++;
        return `/w${n}`;
      },
    };
    expect(readProviderDefaultCwd(provider).raw).toBe('/w1');
    expect(readProviderDefaultCwd(provider).raw).toBe('/w2');
  });
});

describe('normalizeDeclaredCwd never throws, whatever a backend returns', () => {
  const opts = { isContainer: true, hostHome: '/root', origin: 'o', fallback: '~' };
  const circular: Record<string, unknown> = {};
  circular.self = circular;
  it.each([
    ['a BigInt', 10n],
    ['a prototype-less object', Object.create(null) as unknown],
    ['a circular object', circular],
  ])('%s', (_l, raw) => {
    const d = normalizeDeclaredCwd(raw, opts);
    expect(d.value).toBeUndefined();
    expect(d.warning?.code).toBe('default_cwd_ignored');
  });
});
