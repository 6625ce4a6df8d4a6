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

/** The name itself, or an `invalid_input` error that says what was wrong and what to do. */
export function assertFileName(name: string, what = 'file'): string {
  const problem = fileNameProblem(name);
  if (problem)
    throw new SandboxDeskError('invalid_input', `bad ${what} name: ${problem}`, {
      hint: 'rename it: one name without /, NUL or line breaks; choose the folder separately',
    });
  return name;
}
