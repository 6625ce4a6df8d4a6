import { describe, expect, it } from 'vitest';
import { dataDirFromEnv, MAX_SOCKET_PATH_BYTES, servicePaths } from './service-paths.js';

describe('servicePaths', () => {
  it('puts the socket under $XDG_RUNTIME_DIR/sandbox-desk/<hash of the data dir>/', () => {
    const p = servicePaths({ XDG_RUNTIME_DIR: '/run/user/1000' }, '/home/a/.local/share/sandbox-desk', 1000);
    expect(p.socketPath).toMatch(/^\/run\/user\/1000\/sandbox-desk\/[0-9a-f]{12}\/service\.sock$/);
    expect(p.lockFile).toBe('/home/a/.local/share/sandbox-desk/service.lock');
    expect(p.fallbackReason).toBeNull();
  });

  it('two data dirs get two sockets; one data dir always the same', () => {
    const env = { XDG_RUNTIME_DIR: '/run/user/1000' };
    expect(servicePaths(env, '/d/one', 1).socketPath).not.toBe(servicePaths(env, '/d/two', 1).socketPath);
    expect(servicePaths(env, '/d/one', 1).socketPath).toBe(servicePaths(env, '/d/one', 1).socketPath);
  });

  it('without XDG_RUNTIME_DIR (or a relative one) uses <data dir>/run/', () => {
    expect(servicePaths({}, '/data', 1).socketPath).toBe('/data/run/service.sock');
    expect(servicePaths({ XDG_RUNTIME_DIR: 'rel' }, '/data', 1).socketPath).toBe('/data/run/service.sock');
  });

  it('a path over the sun_path limit falls back to a short one and says why', () => {
    const long = '/' + 'x'.repeat(120);
    const p = servicePaths({}, long, 1234);
    expect(Buffer.byteLength(p.socketPath)).toBeLessThanOrEqual(MAX_SOCKET_PATH_BYTES);
    expect(p.socketPath).toMatch(/^\/tmp\/sandbox-desk-1234\/[0-9a-f]{12}\/service\.sock$/);
    expect(p.fallbackReason).toContain('over the 107');
    // Multi-byte names count in bytes, not characters.
    expect(servicePaths({}, '/' + 'é'.repeat(50), 1).fallbackReason).not.toBeNull();
  });

  it('finds the data dir as the core does', () => {
    expect(dataDirFromEnv({ SANDBOX_DESK_HOME: '/h' }, '/home/a')).toBe('/h');
    expect(dataDirFromEnv({ XDG_DATA_HOME: '/x' }, '/home/a')).toBe('/x/sandbox-desk');
    expect(dataDirFromEnv({}, '/home/a')).toBe('/home/a/.local/share/sandbox-desk');
  });
});
