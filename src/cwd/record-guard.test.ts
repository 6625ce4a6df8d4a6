import { describe, it, expect } from 'vitest';
import { guardRecordedCwd, translateWorkdir, type GuardContext } from './record-guard.js';

const container: GuardContext = { isContainer: true, hostHome: '/root', sandboxRoots: ['/home/agent'], mounts: [] };
const local: GuardContext = { isContainer: false, hostHome: '/root', sandboxRoots: [], mounts: [] };
const withMount: GuardContext = { ...container, mounts: [{ hostPath: '/root/proj', sandboxPath: '/workspace' }] };

describe('guardRecordedCwd', () => {
  describe('on a non-container backend', () => {
    it.each([['/home/me/x'], ['/root/x'], ['C:\\x'], ['relative'], ['/etc']])('keeps %s unchanged', (p) => {
      expect(guardRecordedCwd(p, local)).toEqual({ path: p });
    });
  });

  describe('on a container backend', () => {
    it('keeps a /home path under a declared sandbox root', () => {
      expect(guardRecordedCwd('/home/agent/project', container)).toEqual({ path: '/home/agent/project' });
    });

    it('keeps the sandbox root itself', () => {
      expect(guardRecordedCwd('/home/agent', container)).toEqual({ path: '/home/agent' });
    });

    it('drops a /home path of another user with host_path_dropped', () => {
      const g = guardRecordedCwd('/home/someoneelse/x', container);
      expect(g.path).toBeNull();
      expect(g.warning).toMatchObject({ code: 'host_path_dropped', asked: '/home/someoneelse/x' });
    });

    it('drops a prefix sibling of a sandbox root that is /home-shaped', () => {
      const g = guardRecordedCwd('/home/agent2/x', container);
      expect(g.path).toBeNull();
      expect(g.warning?.code).toBe('host_path_dropped');
    });

    it('drops a macOS /Users path', () => {
      const g = guardRecordedCwd('/Users/me/x', container);
      expect(g.path).toBeNull();
      expect(g.warning?.code).toBe('host_path_dropped');
    });

    it('drops a Windows drive path', () => {
      const g = guardRecordedCwd('C:\\x', container);
      expect(g.path).toBeNull();
      expect(g.warning).toMatchObject({ code: 'host_path_dropped', asked: 'C:\\x' });
    });

    it('drops a path under the host home', () => {
      const g = guardRecordedCwd('/root/x', container);
      expect(g.path).toBeNull();
      expect(g.warning?.code).toBe('host_path_dropped');
    });

    it('translates a host path covered by a mount, with host_path_translated', () => {
      const g = guardRecordedCwd('/root/proj/src', withMount);
      expect(g.path).toBe('/workspace/src');
      expect(g.warning).toMatchObject({ code: 'host_path_translated', asked: '/root/proj/src', used: '/workspace/src' });
    });

    it('translates a Windows path covered by a mount', () => {
      const ctx: GuardContext = { ...container, mounts: [{ hostPath: 'C:\\Users\\me\\proj', sandboxPath: '/workspace' }] };
      const g = guardRecordedCwd('c:\\Users\\me\\proj\\a', ctx);
      expect(g.path).toBe('/workspace/a');
      expect(g.warning?.code).toBe('host_path_translated');
    });

    it('still drops a host path the mount does not cover', () => {
      const g = guardRecordedCwd('/root/other', withMount);
      expect(g.path).toBeNull();
      expect(g.warning?.code).toBe('host_path_dropped');
    });

    it('keeps an in-container path without a warning', () => {
      expect(guardRecordedCwd('/workspace/t', container)).toEqual({ path: '/workspace/t' });
      expect(guardRecordedCwd('/tmp', container)).toEqual({ path: '/tmp' });
    });

    it('drops a relative path', () => {
      const g = guardRecordedCwd('proj', container);
      expect(g.path).toBeNull();
      expect(g.warning).toMatchObject({ code: 'host_path_dropped', asked: 'proj' });
    });

    it('ignores a sandbox root of "/" instead of exempting every path', () => {
      const ctx: GuardContext = { ...container, sandboxRoots: ['/'] };
      const g = guardRecordedCwd('/home/someoneelse/x', ctx);
      expect(g.path).toBeNull();
      expect(g.warning?.code).toBe('host_path_dropped');
    });

    it('ignores a relative sandbox root', () => {
      const ctx: GuardContext = { ...container, sandboxRoots: ['home/someoneelse'] };
      expect(guardRecordedCwd('/home/someoneelse/x', ctx).path).toBeNull();
    });

    it('exempts a path under any one of several sandbox roots', () => {
      const ctx: GuardContext = { ...container, sandboxRoots: ['/home/agent', '/root/work'] };
      expect(guardRecordedCwd('/root/work/a', ctx)).toEqual({ path: '/root/work/a' });
    });

    it('prefers a declared sandbox root over a mount translation', () => {
      const ctx: GuardContext = { ...container, mounts: [{ hostPath: '/home/agent', sandboxPath: '/elsewhere' }] };
      expect(guardRecordedCwd('/home/agent/p', ctx)).toEqual({ path: '/home/agent/p' });
    });
  });
});

describe('translateWorkdir', () => {
  it('translates a workdir covered by a mount with host_path_translated', () => {
    const t = translateWorkdir('/root/proj/a', withMount);
    expect(t.path).toBe('/workspace/a');
    expect(t.warning).toMatchObject({ code: 'host_path_translated', asked: '/root/proj/a', used: '/workspace/a' });
  });

  it('returns a host-shaped workdir unchanged when no mount covers it (never null)', () => {
    expect(translateWorkdir('/home/someoneelse/x', container)).toEqual({ path: '/home/someoneelse/x' });
    expect(translateWorkdir('/root/x', container)).toEqual({ path: '/root/x' });
    expect(translateWorkdir('C:\\x', container)).toEqual({ path: 'C:\\x' });
  });

  it('returns an in-container workdir unchanged', () => {
    expect(translateWorkdir('/workspace/t', container)).toEqual({ path: '/workspace/t' });
  });

  it('does not translate on a non-container backend', () => {
    const ctx: GuardContext = { ...withMount, isContainer: false };
    expect(translateWorkdir('/root/proj/a', ctx)).toEqual({ path: '/root/proj/a' });
  });

  it('does not translate a workdir under a declared sandbox root', () => {
    const ctx: GuardContext = { ...container, mounts: [{ hostPath: '/home/agent', sandboxPath: '/elsewhere' }] };
    expect(translateWorkdir('/home/agent/p', ctx)).toEqual({ path: '/home/agent/p' });
  });
});
