import { SandboxDeskError } from './errors.js';

/** Linux's NAME_MAX: one path component, in bytes. */
export const FILE_NAME_MAX_BYTES = 255;

/**
 * Why `name` cannot be one file name in a sandbox directory, or null when it can. An uploaded file or
 * a new folder is ONE component: a `/` would put it somewhere else than the panel shows, a NUL ends
 * the name early in every C call, `.`/`..` name directories that exist already. Newlines are refused
 * too: the file scripts report paths one per line (see sandbox-files.ts), as every path the app takes.
 */
export function fileNameProblem(name: string): string | null {
  if (name.length === 0) return 'the name is empty';
  if (name.includes('\0')) return 'the name contains a NUL byte';
  if (name.includes('/')) return `the name ${JSON.stringify(name)} contains a /: give one file name, not a path`;
  if (/[\n\r]/.test(name)) return 'the name contains a line break';
  if (name === '.' || name === '..') return `${name} is not a file name`;
  // TextEncoder, not Buffer: the renderer checks names with this too (through the contract).
  const bytes = new TextEncoder().encode(name).length;
  if (bytes > FILE_NAME_MAX_BYTES) return `the name is ${bytes} bytes long (at most ${FILE_NAME_MAX_BYTES})`;
  return null;
}

const utf8Bytes = (s: string) => new TextEncoder().encode(s).length;

const TOO_LONG_HINT = `use a shorter name: one file or folder name is at most ${FILE_NAME_MAX_BYTES} bytes (a non-ASCII character takes 2 to 4)`;

/** The name itself, or an `invalid_input` error that says what was wrong and what to do. */
export function assertFileName(name: string, what = 'file'): string {
  const problem = fileNameProblem(name);
  if (problem)
    throw new SandboxDeskError('invalid_input', `bad ${what} name: ${problem}`, {
      hint:
        utf8Bytes(name) > FILE_NAME_MAX_BYTES
          ? TOO_LONG_HINT
          : 'rename it: one name without /, NUL or line breaks; choose the folder separately',
    });
  return name;
}

/**
 * A path whose every component fits NAME_MAX, or an `invalid_input` error naming the one that does
 * not. Linux answers such a path with ENAMETOOLONG, which the file scripts would report as a file
 * that is missing or could not be read: say what is wrong instead.
 */
export function assertPathComponents(path: string): string {
  for (const part of path.split('/')) {
    const bytes = utf8Bytes(part);
    if (bytes > FILE_NAME_MAX_BYTES)
      throw new SandboxDeskError(
        'invalid_input',
        `the name ${JSON.stringify(part.length > 40 ? `${part.slice(0, 40)}…` : part)} in the path is ${bytes} bytes long (at most ${FILE_NAME_MAX_BYTES})`,
        { hint: TOO_LONG_HINT },
      );
  }
  return path;
}
