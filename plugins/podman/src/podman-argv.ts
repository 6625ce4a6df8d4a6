/** Podman command lines, as argv arrays. */

/** The exec prefix: `podman exec -i [-t] -u USER CONTAINER`; the app appends `bash -c …` as separate words. */
export function execPrefixArgv(container: string, user: string | null, interactive: boolean): string[] {
  return ['podman', 'exec', '-i', ...(interactive ? ['-t'] : []), ...(user ? ['-u', user] : []), container];
}

/**
 * Podman's default ulimits can exceed the hard limits of a machine that itself runs in a container,
 * and runc then fails with "error setting rlimit … operation not permitted". Asking for at most the
 * limits we have always works.
 */
export function ulimitArgs(hardNofile: number, hardNproc: number): string[] {
  const clamp = (hard: number, want: number) => (Number.isFinite(hard) && hard > 0 ? Math.min(hard, want) : want);
  const n = clamp(hardNofile, 65536);
  const p = clamp(hardNproc, 8192);
  return ['--ulimit', `nofile=${n}:${n}`, '--ulimit', `nproc=${p}:${p}`];
}

export function createArgv(opts: {
  name: string;
  image: string;
  labels: Record<string, string>;
  env: Record<string, string>;
  mounts: { hostPath: string; sandboxPath: string; readOnly?: boolean }[];
  ulimits: string[];
  hostname: string;
}): string[] {
  return [
    'podman',
    'create',
    '--name',
    opts.name,
    '--hostname',
    opts.hostname,
    ...Object.entries(opts.labels).flatMap(([k, v]) => ['--label', `${k}=${v}`]),
    ...Object.entries(opts.env).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
    ...opts.mounts.flatMap((m) => ['--volume', `${m.hostPath}:${m.sandboxPath}${m.readOnly ? ':ro' : ''}`]),
    ...opts.ulimits,
    // The keep-alive runs as root so `exec -u root` keeps root's capabilities; commands run as the user.
    '--user',
    'root',
    '--cap-drop',
    'NET_RAW',
    '--cap-drop',
    'MKNOD',
    '--cap-drop',
    'AUDIT_WRITE',
    '--security-opt',
    'no-new-privileges',
    '--pids-limit',
    '4096',
    '--shm-size',
    '1g',
    '--entrypoint',
    'sleep',
    opts.image,
    'infinity',
  ];
}
