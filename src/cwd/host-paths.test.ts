import { describe, it, expect } from 'vitest';
import { isHostShapedPath, isWindowsPath, isUnderPath, normalizeAbsolute, translateMountedPath } from './host-paths.js';
import type { Mount } from '../sandbox/provider.js';

describe('isUnderPath', () => {
  it('counts the root itself as under the root', () => {
    expect(isUnderPath('/a/proj', '/a/proj')).toBe(true);
  });

  it('counts a direct child and a deep descendant as under the root', () => {
    expect(isUnderPath('/a/proj/src', '/a/proj')).toBe(true);
    expect(isUnderPath('/a/proj/src/lib/x', '/a/proj')).toBe(true);
  });

  it('does not count a sibling that shares a name prefix', () => {
    expect(isUnderPath('/a/proj-x', '/a/proj')).toBe(false);
    expect(isUnderPath('/a/projx/y', '/a/proj')).toBe(false);
  });

  it('does not count the parent of the root', () => {
    expect(isUnderPath('/a', '/a/proj')).toBe(false);
  });

  it('treats everything absolute as under "/"', () => {
    expect(isUnderPath('/', '/')).toBe(true);
    expect(isUnderPath('/etc/passwd', '/')).toBe(true);
  });

  it('ignores trailing slashes on either side', () => {
    expect(isUnderPath('/a/proj/', '/a/proj')).toBe(true);
    expect(isUnderPath('/a/proj/x', '/a/proj/')).toBe(true);
  });

  it('compares lexically normalised paths, so ".." cannot escape the root', () => {
    expect(isUnderPath('/a/proj/../other', '/a/proj')).toBe(false);
    expect(isUnderPath('/a/other/../proj/x', '/a/proj')).toBe(true);
  });

  it('returns false for a relative path or a relative root', () => {
    expect(isUnderPath('a/proj', '/a')).toBe(false);
    expect(isUnderPath('/a/proj', 'a')).toBe(false);
    expect(isUnderPath('proj', 'proj')).toBe(false);
  });
});

describe('isHostShapedPath', () => {
  const ctx = { hostHome: '/root' };

  it('recognises Windows drive paths with any drive letter and either slash', () => {
    expect(isHostShapedPath('C:\\Users\\me', ctx)).toBe(true);
    expect(isHostShapedPath('D:\\x', ctx)).toBe(true);
    expect(isHostShapedPath('z:\\x', ctx)).toBe(true);
    expect(isHostShapedPath('C:/x', ctx)).toBe(true);
  });

  it('does not treat a bare drive letter without a separator as a drive path', () => {
    expect(isHostShapedPath('C:', ctx)).toBe(false);
    expect(isHostShapedPath('C:x', ctx)).toBe(false);
  });

  it('recognises UNC paths', () => {
    expect(isHostShapedPath('\\\\server\\share', ctx)).toBe(true);
  });

  it('recognises macOS /Users paths and Linux /home paths', () => {
    expect(isHostShapedPath('/Users/x', ctx)).toBe(true);
    expect(isHostShapedPath('/home/x', ctx)).toBe(true);
    expect(isHostShapedPath('/home', ctx)).toBe(true);
  });

  it('does not treat a prefix sibling of /home as host-shaped', () => {
    expect(isHostShapedPath('/homework/x', ctx)).toBe(false);
    expect(isHostShapedPath('/Users-shared/x', ctx)).toBe(false);
  });

  it('recognises paths under the given host home', () => {
    expect(isHostShapedPath('/root/proj', { hostHome: '/root' })).toBe(true);
    expect(isHostShapedPath('/root', { hostHome: '/root' })).toBe(true);
    expect(isHostShapedPath('/srv/me/x', { hostHome: '/srv/me/' })).toBe(true);
  });

  it('does not treat a prefix sibling of the host home as host-shaped', () => {
    expect(isHostShapedPath('/rootfs/x', { hostHome: '/root' })).toBe(false);
  });

  it('ignores a host home of "/" (it would make every path host-shaped)', () => {
    expect(isHostShapedPath('/root/proj', { hostHome: '/' })).toBe(false);
    expect(isHostShapedPath('/etc', { hostHome: '/' })).toBe(false);
  });

  it('ignores a relative host home', () => {
    expect(isHostShapedPath('/root/proj', { hostHome: 'root' })).toBe(false);
  });

  it('returns false for ordinary system paths', () => {
    expect(isHostShapedPath('/etc', ctx)).toBe(false);
    expect(isHostShapedPath('/tmp', ctx)).toBe(false);
    expect(isHostShapedPath('/workspace/t', ctx)).toBe(false);
  });

  it('returns false for relative paths', () => {
    expect(isHostShapedPath('proj', ctx)).toBe(false);
    expect(isHostShapedPath('home/x', ctx)).toBe(false);
    expect(isHostShapedPath('~/x', ctx)).toBe(false);
  });
});

describe('normalizeAbsolute', () => {
  it('removes a trailing slash', () => {
    expect(normalizeAbsolute('/a/b/')).toBe('/a/b');
  });

  it('keeps the root as "/"', () => {
    expect(normalizeAbsolute('/')).toBe('/');
    expect(normalizeAbsolute('//')).toBe('/');
  });

  it('resolves "." and ".." segments and collapses repeated slashes', () => {
    expect(normalizeAbsolute('/a/./b/../c//d')).toBe('/a/c/d');
  });

  it('does not go above the root', () => {
    expect(normalizeAbsolute('/../../x')).toBe('/x');
  });

  it('leaves an already normal path unchanged', () => {
    expect(normalizeAbsolute('/workspace/t')).toBe('/workspace/t');
  });
});

describe('translateMountedPath', () => {
  const mounts: Mount[] = [{ hostPath: '/home/me/proj', sandboxPath: '/workspace' }];

  it('maps the mount root itself to the sandbox path', () => {
    expect(translateMountedPath('/home/me/proj', mounts)).toBe('/workspace');
  });

  it('maps a child of the mount root below the sandbox path', () => {
    expect(translateMountedPath('/home/me/proj/src/lib', mounts)).toBe('/workspace/src/lib');
  });

  it('returns null for a sibling sharing a name prefix', () => {
    expect(translateMountedPath('/home/me/proj-x', mounts)).toBeNull();
    expect(translateMountedPath('/home/me/projx/a', mounts)).toBeNull();
  });

  it('returns null when no mount covers the path', () => {
    expect(translateMountedPath('/etc', mounts)).toBeNull();
    expect(translateMountedPath('/home/me', mounts)).toBeNull();
  });

  it('returns null when there are no mounts', () => {
    expect(translateMountedPath('/home/me/proj', [])).toBeNull();
  });

  it('maps the mount root given with a trailing slash to the bare sandbox path', () => {
    expect(translateMountedPath('/home/me/proj/', mounts)).toBe('/workspace');
    expect(translateMountedPath('/home/me/proj//', mounts)).toBe('/workspace');
  });

  it('maps a child given with a trailing slash to the same directory', () => {
    // Compared normalised: the child case currently keeps the trailing slash (see report).
    expect(normalizeAbsolute(translateMountedPath('/home/me/proj/src/', mounts)!)).toBe('/workspace/src');
  });

  it('ignores trailing slashes on the mount host path and sandbox path', () => {
    const m: Mount[] = [{ hostPath: '/home/me/proj/', sandboxPath: '/workspace/' }];
    expect(translateMountedPath('/home/me/proj', m)).toBe('/workspace');
    expect(translateMountedPath('/home/me/proj/a', m)).toBe('/workspace/a');
  });

  it('is case-sensitive for POSIX host paths', () => {
    expect(translateMountedPath('/Home/Me/Proj', mounts)).toBeNull();
  });

  it('maps a Windows path whose drive letter case and separators differ from the mount', () => {
    const m: Mount[] = [{ hostPath: 'C:\\Users\\me\\proj', sandboxPath: '/workspace' }];
    expect(translateMountedPath('c:\\Users\\me\\proj\\src', m)).toBe('/workspace/src');
    expect(translateMountedPath('C:/Users/me/proj/src', m)).toBe('/workspace/src');
    expect(translateMountedPath('c:/Users/me/proj', m)).toBe('/workspace');
  });

  it('keeps the case of the remainder of a translated Windows path', () => {
    const m: Mount[] = [{ hostPath: 'C:\\Users\\me\\proj', sandboxPath: '/workspace' }];
    expect(translateMountedPath('C:\\Users\\me\\proj\\Src\\Main', m)).toBe('/workspace/Src/Main');
  });

  it('maps a Windows path with trailing backslashes', () => {
    const m: Mount[] = [{ hostPath: 'D:\\work\\', sandboxPath: '/w' }];
    expect(translateMountedPath('d:\\work\\', m)).toBe('/w');
    expect(normalizeAbsolute(translateMountedPath('D:\\work\\a\\', m)!)).toBe('/w/a');
  });

  it('does not map a Windows path on another drive', () => {
    const m: Mount[] = [{ hostPath: 'C:\\proj', sandboxPath: '/workspace' }];
    expect(translateMountedPath('D:\\proj\\x', m)).toBeNull();
  });

  it('does not map a Windows prefix sibling', () => {
    const m: Mount[] = [{ hostPath: 'C:\\proj', sandboxPath: '/workspace' }];
    expect(translateMountedPath('C:\\proj-x\\a', m)).toBeNull();
  });

  it('uses the first mount that covers the path', () => {
    const m: Mount[] = [
      { hostPath: '/home/me', sandboxPath: '/h' },
      { hostPath: '/home/me/proj', sandboxPath: '/workspace' },
    ];
    expect(translateMountedPath('/home/me/proj/x', m)).toBe('/h/proj/x');
  });

  it('skips mounts that do not cover the path', () => {
    const m: Mount[] = [
      { hostPath: '/data', sandboxPath: '/d' },
      { hostPath: '/home/me/proj', sandboxPath: '/workspace' },
    ];
    expect(translateMountedPath('/home/me/proj/x', m)).toBe('/workspace/x');
  });
});

describe('translateMountedPath edge cases', () => {
  const mounts = [{ hostPath: '/home/me/proj', sandboxPath: '/workspace' }];
  it('does not let `..` escape the mount', () => {
    expect(translateMountedPath('/home/me/proj/../secret', mounts)).toBeNull();
    expect(translateMountedPath('/home/me/proj/a/../b', mounts)).toBe('/workspace/b');
  });
  it('maps everything under a mount of the host root', () => {
    expect(translateMountedPath('/etc', [{ hostPath: '/', sandboxPath: '/host' }])).toBe('/host/etc');
  });
  it('drops a trailing slash on child paths too', () => {
    expect(translateMountedPath('/home/me/proj/src/', mounts)).toBe('/workspace/src');
  });
  it('never translates a relative path', () => {
    expect(translateMountedPath('src', [{ hostPath: '/', sandboxPath: '/host' }])).toBeNull();
  });
});

describe('isWindowsPath (issue 12: host paths of every OS are recognised before anything runs)', () => {
  it.each([['D:\\proj\\x'], ['C:/Users/me'], ['c:\\'], ['\\\\server\\share'], ['\\\\?\\C:\\x'], ['\\proj'], ['C:proj\\x']])(
    'recognises %s',
    (p) => {
      expect(isWindowsPath(p)).toBe(true);
    },
  );
  it.each([['/proj/x'], ['proj'], ['C:'], ['C:x'], ['a\\b']])('leaves %s alone', (p) => {
    expect(isWindowsPath(p)).toBe(false);
  });
});
