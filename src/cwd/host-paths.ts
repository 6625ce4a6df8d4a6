import { posix } from 'node:path';
import type { Mount } from '../sandbox/provider.js';

/**
 * Classifying paths that belong to the host. On a container backend such a path means nothing inside
 * the sandbox, and `cd`-ing to it fails (Hermes' exit-126 class). Pure functions, no I/O.
 */

const DRIVE_RE = /^[A-Za-z]:[\\/]/;

/**
 * A path of Windows shape, which no Linux sandbox can enter and bash cannot walk: a drive (`C:\…`,
 * `C:/…`, a drive-relative `C:x\y`), a UNC or device path (`\\server\share`, `\\?\C:\…`), a
 * rooted `\…`.
 */
export function isWindowsPath(path: string): boolean {
  if (path.startsWith('\\')) return true;
  if (DRIVE_RE.test(path)) return true;
  // `C:proj\x` is drive-relative on Windows; without a backslash it is just an odd relative name.
  return /^[A-Za-z]:/.test(path) && path.includes('\\');
}

/** Normalises an absolute POSIX path lexically (no trailing slash, no `.`/`..`). */
export function normalizeAbsolute(path: string): string {
  const n = posix.normalize(path);
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}

/** true when `path` is `root` or lies below it. A sibling sharing a prefix (`/a/proj-x` vs `/a/proj`) is not. */
export function isUnderPath(path: string, root: string): boolean {
  if (!path.startsWith('/') || !root.startsWith('/')) return false;
  const p = normalizeAbsolute(path);
  const r = normalizeAbsolute(root);
  if (r === '/') return true;
  return p === r || p.startsWith(r + '/');
}

export interface HostPathContext {
  /** The host user's home directory (os.homedir()). */
  hostHome: string;
}

/**
 * true for paths that name the host rather than a sandbox: a Windows drive, a macOS `/Users/…`, a Linux
 * `/home/…`, or anything under the host user's home. Whether such a path is nonetheless legitimate inside
 * the sandbox (it lies under the home the sandbox declared) is the caller's question.
 */
export function isHostShapedPath(path: string, ctx: HostPathContext): boolean {
  if (isWindowsPath(path)) return true;
  if (!path.startsWith('/')) return false;
  if (isUnderPath(path, '/Users') || isUnderPath(path, '/home')) return true;
  const home = ctx.hostHome;
  return home.startsWith('/') && normalizeAbsolute(home) !== '/' && isUnderPath(path, home);
}

/** Host shapes no Linux sandbox has: a Windows drive or UNC path, a macOS `/Users/…`. */
export function isHostOnly(path: string): boolean {
  return isWindowsPath(path) || isUnderPath(path, '/Users');
}

/** A host path in POSIX form: backslashes become slashes, `.`/`..` are resolved lexically, a Windows drive letter is lower-cased. */
function comparable(path: string): string {
  const slashed = path.replace(/\\/g, '/');
  const drive = /^[A-Za-z]:\//.test(slashed) ? slashed.slice(0, 2).toLowerCase() : '';
  const rest = drive ? slashed.slice(2) : slashed;
  return drive + normalizeAbsolute(rest.startsWith('/') ? rest : '/' + rest);
}

/**
 * Maps a host path under a declared mount to its in-sandbox path, or null when no mount covers it.
 * Paths are compared after `..` is resolved, so `/mount/../elsewhere` never passes as under the mount.
 */
export function translateMountedPath(path: string, mounts: readonly Mount[]): string | null {
  if (!path.startsWith('/') && !DRIVE_RE.test(path)) return null;
  const p = comparable(path);
  for (const m of mounts) {
    const root = comparable(m.hostPath);
    const under = root === '/' || root.endsWith(':/') ? p.startsWith(root) : p === root || p.startsWith(root + '/');
    if (!under) continue;
    const rest = p.slice(root.length).replace(/^\/+/, '');
    return rest ? posix.join(normalizeAbsolute(m.sandboxPath), rest) : normalizeAbsolute(m.sandboxPath);
  }
  return null;
}
