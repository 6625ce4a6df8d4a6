import { describe, expect, it } from 'vitest';
import { createArgv, execPrefixArgv, ulimitArgs } from './podman-argv.js';

describe('podman argv', () => {
  it('exec prefix: -i always, -t for terminals, -u for the user', () => {
    expect(execPrefixArgv('c1', 'agent', false)).toEqual(['podman', 'exec', '-i', '-u', 'agent', 'c1']);
    expect(execPrefixArgv('c1', null, true)).toEqual(['podman', 'exec', '-i', '-t', 'c1']);
  });
  it('ulimits never above the hard limits we have', () => {
    expect(ulimitArgs(20000, 96365)).toEqual(['--ulimit', 'nofile=20000:20000', '--ulimit', 'nproc=8192:8192']);
    expect(ulimitArgs(NaN, 0)).toEqual(['--ulimit', 'nofile=65536:65536', '--ulimit', 'nproc=8192:8192']);
  });
  it('create: labels, env and mounts as separate words; the image then the command', () => {
    const a = createArgv({
      name: 'n',
      image: 'img',
      labels: { a: 'b c' },
      env: { X: '1' },
      mounts: [{ hostPath: '/h', sandboxPath: '/s', readOnly: true }],
      ulimits: [],
      hostname: 'h',
    });
    expect(a).toContain('a=b c');
    expect(a).toContain('/h:/s:ro');
    expect(a.slice(-2)).toEqual(['img', 'infinity']);
  });
});
