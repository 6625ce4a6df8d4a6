import { describe, expect, it } from 'vitest';
import { parseCpArg } from './cp-command.js';

describe('parseCpArg', () => {
  it('NAME:PATH names a sandbox path; NAME: is the session cwd', () => {
    expect(parseCpArg('web:notes.txt')).toEqual({ sandbox: 'web', path: 'notes.txt' });
    expect(parseCpArg('web:/tmp/a b')).toEqual({ sandbox: 'web', path: '/tmp/a b' });
    expect(parseCpArg('web:')).toEqual({ sandbox: 'web', path: '.' });
  });

  it('anything else is local, including paths with a colon that start with . or /', () => {
    expect(parseCpArg('./a:b')).toEqual({ local: './a:b' });
    expect(parseCpArg('/x:y')).toEqual({ local: '/x:y' });
    expect(parseCpArg('notes.txt')).toEqual({ local: 'notes.txt' });
    expect(parseCpArg('-bad:x')).toEqual({ local: '-bad:x' });
  });
});
