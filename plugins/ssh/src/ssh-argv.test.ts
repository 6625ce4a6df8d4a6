import { describe, expect, it } from 'vitest';
import { controlArgv, execPrefixArgv, masterArgv } from './ssh-argv.js';

const t = { host: '127.0.0.1', port: 2222, user: 'agent', key: '/k/id', knownHosts: '/d/known_hosts', controlPath: '/d/c/ab12' };

describe('ssh argv', () => {
  it('exec prefix: batch mode, the pinned known_hosts, the control path; -T for streams, -tt for terminals', () => {
    const s = execPrefixArgv(t, false);
    expect(s[0]).toBe('ssh');
    expect(s.at(-1)).toBe('127.0.0.1');
    expect(s.at(-2)).toBe('-T');
    expect(execPrefixArgv(t, true).at(-2)).toBe('-tt');
    const joined = s.join(' ');
    for (const o of [
      'BatchMode=yes',
      'StrictHostKeyChecking=yes',
      'UserKnownHostsFile=/d/known_hosts',
      'ControlPath=/d/c/ab12',
      'ControlMaster=no',
      '-p 2222',
      '-l agent',
      '-i /k/id',
      '-e none',
    ])
      expect(joined).toContain(o);
    expect(joined).not.toContain('/dev/null');
  });
  it('another user is reached with sudo on the machine, the name quoted for the remote shell', () => {
    expect(execPrefixArgv(t, false, 'agent').at(-1)).toBe('127.0.0.1');
    expect(execPrefixArgv(t, false, 'root').slice(-7)).toEqual(['127.0.0.1', 'sudo', '-n', '-H', '-u', 'root', '--']);
    expect(execPrefixArgv(t, false, "o'brien").at(-2)).toBe(`'o'\\''brien'`);
  });
  it('the master is started explicitly in the background with no command', () => {
    expect(masterArgv(t, 600).slice(-3)).toEqual(['-N', '-f', '127.0.0.1']);
    // ssh reads -M with ControlMaster=yes as ControlMaster=ask, which refuses every client's session.
    expect(masterArgv(t, 600)).not.toContain('-M');
    expect(masterArgv(t, 600).join(' ')).toContain('ControlPersist=600');
    expect(controlArgv(t, 'check').slice(-3)).toEqual(['-O', 'check', '127.0.0.1']);
  });
});

describe('ssh backend label', () => {
  it('declares itself a remote machine, so the window does not label it "(container)"', async () => {
    const { SshProvider } = await import('./ssh-provider.js');
    const p = new SshProvider({ dataDir: '/nonexistent' } as never);
    expect(p.isolation).toBe('remote');
  });
});
