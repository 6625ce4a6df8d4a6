import type { SandboxEnvironment } from '../../sandbox/provider.js';

/**
 * A "sandbox" that is a folder of this machine — its home, default cwd and temp dir — reached through
 * `prefix` (`[]`: commands run here as they are; `['env', 'PATH=…']`: a fake program first on PATH).
 * The desktop's unit tests run its real scripts against it; `extra` adds what one test needs (an inbox).
 */
export function folderSandbox(dir: string, prefix: string[] = [], extra: Partial<SandboxEnvironment> = {}): SandboxEnvironment {
  return {
    user: null,
    home: dir,
    defaultCwd: dir,
    cwd: null,
    mounts: [],
    incarnation: 'i1',
    getTempDir: () => dir,
    execPrefix: () => prefix,
    ...extra,
  };
}
