import { describe, expect, it } from 'vitest';
import { thrown } from '../../test/expect-error.js';
import { assertFileName, fileNameProblem } from './file-names.js';

describe('fileNameProblem', () => {
  it('accepts ordinary names, spaces, unicode and dotfiles', () => {
    for (const n of ['a.txt', 'my report (1).pdf', 'ünïcødé ✓', '.bashrc', '...', 'x'.repeat(255)]) expect(fileNameProblem(n)).toBeNull();
  });

  it('refuses /, NUL, line breaks, . and .., empty and overlong names', () => {
    expect(fileNameProblem('a/b')).toMatch(/contains a \//);
    expect(fileNameProblem('/etc')).toMatch(/contains a \//);
    expect(fileNameProblem('a\0b')).toMatch(/NUL/);
    expect(fileNameProblem('a\nb')).toMatch(/line break/);
    expect(fileNameProblem('..')).toMatch(/not a file name/);
    expect(fileNameProblem('.')).toMatch(/not a file name/);
    expect(fileNameProblem('')).toMatch(/empty/);
    // 128 two-byte characters: 256 bytes, over NAME_MAX though only 128 characters.
    expect(fileNameProblem('é'.repeat(128))).toMatch(/256 bytes/);
  });

  it('assertFileName throws invalid_input with a hint', () => {
    const e = thrown(() => assertFileName('x/y', 'folder'));
    expect(e.code).toBe('invalid_input');
    expect(e.message).toMatch(/bad folder name/);
    expect(e.hint).toMatch(/without \//);
    expect(assertFileName('ok.txt')).toBe('ok.txt');
  });
});
