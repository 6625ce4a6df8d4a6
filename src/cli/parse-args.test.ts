import { describe, it, expect } from 'vitest';
import { thrown } from '../../test/expect-error.js';
import { parseKeyValues, parseMounts, parseTimeout, wantsJsonOutput } from './parse-args.js';

describe('parseTimeout', () => {
  it.each([['0'], ['-1'], ['abc'], [''], ['   '], ['Infinity'], ['-Infinity'], ['NaN'], ['1s']])('rejects %j as invalid_input', (raw) => {
    const err = thrown(() => parseTimeout(raw));
    expect(err.code).toBe('invalid_input');
    expect(err.message).toContain('--timeout');
  });

  it('accepts a fractional number of seconds', () => {
    expect(parseTimeout('1.5')).toBe(1.5);
  });

  it('accepts a whole number of seconds', () => {
    expect(parseTimeout('30')).toBe(30);
  });

  it('accepts a tiny positive number', () => {
    expect(parseTimeout('0.001')).toBe(0.001);
  });

  it('quotes the bad value in the message', () => {
    expect(thrown(() => parseTimeout('abc')).message).toContain('"abc"');
  });
});

describe('parseKeyValues', () => {
  it('parses KEY=VALUE pairs', () => {
    expect(parseKeyValues(['A=1', 'B=two'], '--env')).toEqual({ A: '1', B: 'two' });
  });

  it('splits at the first "=" only', () => {
    expect(parseKeyValues(['URL=a=b=c'], '--env')).toEqual({ URL: 'a=b=c' });
  });

  it('accepts an empty value', () => {
    expect(parseKeyValues(['EMPTY='], '--env')).toEqual({ EMPTY: '' });
  });

  it('keeps spaces in the value', () => {
    expect(parseKeyValues(['MSG= hello world '], '--env')).toEqual({ MSG: ' hello world ' });
  });

  it('lets a later duplicate key win', () => {
    expect(parseKeyValues(['A=1', 'A=2'], '--env')).toEqual({ A: '2' });
  });

  it('returns an empty object for no items', () => {
    expect(parseKeyValues([], '--env')).toEqual({});
  });

  it.each([['NOEQUALS'], ['=value'], ['']])('rejects %j as invalid_input naming the flag', (item) => {
    const err = thrown(() => parseKeyValues([item], '--option'));
    expect(err.code).toBe('invalid_input');
    expect(err.message).toContain('--option');
  });
});

describe('parseMounts', () => {
  it('parses /host:/sandbox', () => {
    expect(parseMounts(['/home/me/proj:/workspace'])).toEqual([{ hostPath: '/home/me/proj', sandboxPath: '/workspace' }]);
  });

  it('parses a read-only mount with :ro', () => {
    expect(parseMounts(['/data:/mnt/data:ro'])).toEqual([{ hostPath: '/data', sandboxPath: '/mnt/data', readOnly: true }]);
  });

  it('leaves readOnly out of a writable mount', () => {
    expect(parseMounts(['/a:/b'])[0]).not.toHaveProperty('readOnly');
  });

  it('parses several mounts in order', () => {
    expect(parseMounts(['/a:/b', '/c:/d:ro']).map((m) => m.hostPath)).toEqual(['/a', '/c']);
  });

  it.each([
    ['a single path', '/a'],
    ['a relative host path', 'a:/b'],
    ['a relative sandbox path', '/a:b'],
    ['an option other than ro', '/a:/b:rw'],
    ['too many fields', '/a:/b:ro:x'],
    ['an empty host path', ':/b'],
    ['an empty sandbox path', '/a:'],
    ['an empty string', ''],
    ['a Windows host path', 'C:\\proj:/workspace'],
  ])('rejects %s as invalid_input', (_label, item) => {
    const err = thrown(() => parseMounts([item]));
    expect(err.code).toBe('invalid_input');
    expect(err.message).toContain('--mount');
  });
});

describe('parseKeyValues keeps every key as given', () => {
  it('keeps a key named __proto__ as an own property', () => {
    const r = parseKeyValues(['__proto__=x'], '--env');
    expect(Object.keys(r)).toEqual(['__proto__']);
    expect(Object.getOwnPropertyDescriptor(r, '__proto__')?.value).toBe('x');
  });
});

describe('wantsJsonOutput (issue 12: --json after -- belongs to the sandbox command)', () => {
  it("sees --json among the app's options", () => {
    expect(wantsJsonOutput(['exec', 'box', '--json', '--', 'pwd'])).toBe(true);
    expect(wantsJsonOutput(['sandbox', 'list', '--json'])).toBe(true);
  });
  it('ignores --json after --', () => {
    expect(wantsJsonOutput(['exec', 'box', '--', 'tool', '--json'])).toBe(false);
    expect(wantsJsonOutput(['exec', 'box', '--', '--json'])).toBe(false);
  });
});
