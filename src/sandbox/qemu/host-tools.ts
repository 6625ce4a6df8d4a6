import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { SandboxDeskError } from '../../shared/errors.js';

/** The programs the qemu backend runs on this machine, and the Debian package of each. */
const TOOLS = {
  'qemu-system-x86_64': 'qemu-system-x86',
  'qemu-img': 'qemu-utils',
  ssh: 'openssh-client',
  'ssh-keygen': 'openssh-client',
} as const;

export function onPath(bin: string, path = process.env.PATH ?? ''): boolean {
  return path.split(delimiter).some((dir) => {
    if (!dir) return false;
    try {
      accessSync(join(dir, bin), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * Says which programs are missing, and which packages bring them, before anything is made — instead
 * of a "spawn ENOENT" in the middle of a create.
 */
export function requireHostTools(path = process.env.PATH ?? ''): void {
  const missing = Object.keys(TOOLS).filter((bin) => !onPath(bin, path)) as (keyof typeof TOOLS)[];
  if (missing.length === 0) return;
  const packages = [...new Set(missing.map((b) => TOOLS[b]))];
  throw new SandboxDeskError(
    'backend_unavailable',
    `the qemu backend needs ${missing.join(', ')}, which ${missing.length === 1 ? 'is' : 'are'} not installed here`,
    {
      hint: `install ${packages.join(' ')} (\`npm run setup\` does: apt-get install -y ${packages.join(' ')})`,
    },
  );
}
