import { describe, expect, it } from 'vitest';
import { describeFound } from './process-of-connection.js';

const found = (comm: string, cmdline: string) => ({ hostPid: 4242, pid: 17, ancestry: [9, 1], comm, cmdline });

describe('a connection’s process as the log shows it', () => {
  it('name, pid in the sandbox and the command line on one line; the ancestry as found', () => {
    expect(describeFound(found('curl', 'curl\0-s\0http://example.com/\0'))).toEqual({
      process: 'curl (pid 17): curl -s http://example.com/',
      pid: 17,
      ancestry: [9, 1],
    });
  });

  it('the exec wrapper is named, not printed; a long command line is cut short; none at all is the name alone', () => {
    expect(describeFound(found('bash', 'bash\0-c\0__sd_enter() { … }\0')).process).toBe(
      'bash (pid 17): the command shell of sandbox-desk exec',
    );
    const long = describeFound(found('python3', `python3\0-c\0${'x'.repeat(500)}`)).process;
    expect(long).toMatch(/^python3 \(pid 17\): python3 -c x+…$/);
    expect(long.length).toBeLessThan(150);
    expect(describeFound(found('kworker', '')).process).toBe('kworker (pid 17)');
    expect(describeFound(found('', 'a\nb')).process).toBe('? (pid 17): a b');
  });
});
