/**
 * The one check of a directory path a caller hands us — `--workdir`, `exec`'s workdir, a session's
 * cwd at creation — so every entry point refuses the same paths with the same words. Pure and free of
 * Node: the contract (and so the renderer) uses it.
 */

/** Linux PATH_MAX, including the terminating NUL. */
export const PATH_MAX = 4096;

export interface CwdPathProblem {
  message: string;
  hint: string;
}

/** What is wrong with `path` as a directory name on Linux, or null when nothing is. */
export function cwdPathProblem(path: string, what: string): CwdPathProblem | null {
  if (path.length === 0) return { message: `${what} is empty`, hint: `omit the ${what} or give a directory` };
  if (path.includes('\0')) return { message: `${what} contains a NUL byte`, hint: 'a directory name cannot contain NUL' };
  if (/[\n\r]/.test(path)) return { message: `${what} contains a newline`, hint: 'pass the directory on one line' };
  const bytes = new TextEncoder().encode(path).length;
  if (bytes >= PATH_MAX) return { message: `${what} is ${bytes} bytes, longer than PATH_MAX (${PATH_MAX})`, hint: 'use a shorter path' };
  return null;
}
