import { describe, expect, it } from 'vitest';
import { withoutShellErrorPrefix } from './shell-error-prefix.js';

const clean = (s: string | Buffer): string => withoutShellErrorPrefix(Buffer.isBuffer(s) ? s : Buffer.from(s)).toString('utf8');

describe('withoutShellErrorPrefix', () => {
  it("drops bash's script name and line from a failing cd", () => {
    expect(clean('sandbox-desk: line 60: cd: /nope: No such file or directory\n')).toBe('cd: /nope: No such file or directory\n');
  });
  it('on every line, and inside a function the command defined ("environment")', () => {
    expect(clean('sandbox-desk: line 60: foo: command not found\nenvironment: line 1: cd: /x: Not a directory\n')).toBe(
      'foo: command not found\ncd: /x: Not a directory\n',
    );
  });
  it("leaves the command's own stderr alone, mid-line mentions too", () => {
    const own = 'error: sandbox-desk: line 3: is quoted here\nplain\n';
    expect(clean(own)).toBe(own);
  });
  it('keeps bytes that are not UTF-8 as they were', () => {
    const raw = Buffer.concat([Buffer.from('sandbox-desk: line 2: '), Buffer.from([0xff, 0xfe, 0x0a])]);
    expect(withoutShellErrorPrefix(raw)).toEqual(Buffer.from([0xff, 0xfe, 0x0a]));
  });
  it('returns the same buffer when there is nothing to drop', () => {
    const b = Buffer.from('x\n');
    expect(withoutShellErrorPrefix(b)).toBe(b);
  });
});
