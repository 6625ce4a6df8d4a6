import { describe, expect, it } from 'vitest';
import { cwdPathProblem, PATH_MAX } from './cwd-path.js';

describe('cwdPathProblem', () => {
  it.each([
    ['', /is empty/],
    ['/a\0b', /NUL/],
    ['/a\nb', /newline/],
    ['/a\rb', /newline/],
    ['/' + 'a'.repeat(4999), /5000 bytes, longer than PATH_MAX \(4096\)/],
    ['/' + 'é'.repeat(2048), /4097 bytes/],
  ])('refuses %j', (path, why) => {
    expect(cwdPathProblem(path, 'workdir')?.message).toMatch(why);
  });

  it('accepts ordinary and just-short-enough paths', () => {
    expect(cwdPathProblem('/home/agent/project', 'workdir')).toBeNull();
    expect(cwdPathProblem('/' + 'a'.repeat(PATH_MAX - 2), 'workdir')).toBeNull();
  });

  it('names the field it checked', () => {
    expect(cwdPathProblem('', 'session cwd')?.message).toBe('session cwd is empty');
  });
});
