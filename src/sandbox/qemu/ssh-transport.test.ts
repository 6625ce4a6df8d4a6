import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { isHostKeyMismatch, masterArgv, sshExecPrefix, type SshTarget } from './ssh-transport.js';

const t: SshTarget = {
  port: 40022,
  loginUser: 'agent',
  key: '/d/qemu/id_ed25519',
  knownHosts: '/d/vm/known_hosts',
  hostKeyAlias: 'sdesk-vm-a',
  controlPath: '/d/vm/ssh.ctl',
};
const opt = (argv: string[]): string[] => argv.flatMap((w, i) => (argv[i - 1] === '-o' ? [w] : []));

describe('sshExecPrefix', () => {
  it("pins the host key to the VM's own known_hosts, never trusting blindly", () => {
    const argv = sshExecPrefix(t, { interactive: false });
    expect(opt(argv)).toEqual(
      expect.arrayContaining([
        'BatchMode=yes',
        'StrictHostKeyChecking=yes',
        'UserKnownHostsFile=/d/vm/known_hosts',
        'HostKeyAlias=sdesk-vm-a',
      ]),
    );
    expect(argv.join(' ')).not.toMatch(/StrictHostKeyChecking=no|UserKnownHostsFile=\/dev\/null/);
  });

  it("uses the VM's key and port and reuses the master connection without ever becoming one", () => {
    const argv = sshExecPrefix(t, { interactive: false });
    expect(argv.slice(0, 1)).toEqual(['ssh']);
    expect(argv[argv.indexOf('-i') + 1]).toBe('/d/qemu/id_ed25519');
    expect(argv[argv.indexOf('-p') + 1]).toBe('40022');
    expect(opt(argv)).toEqual(expect.arrayContaining(['ControlMaster=no', 'ControlPath=/d/vm/ssh.ctl', 'IdentitiesOnly=yes']));
    expect(argv.at(-1)).toBe('agent@127.0.0.1');
  });

  it('asks for -T for streams and -tt for terminals', () => {
    expect(sshExecPrefix(t, { interactive: false })).toContain('-T');
    expect(sshExecPrefix(t, { interactive: false })).not.toContain('-tt');
    expect(sshExecPrefix(t, { interactive: true })).toContain('-tt');
  });

  it('reaches another user through sudo, quoting the name for the remote shell', () => {
    expect(sshExecPrefix(t, { user: 'agent', interactive: false }).at(-1)).toBe('agent@127.0.0.1');
    expect(sshExecPrefix(t, { user: 'root', interactive: false }).slice(-7)).toEqual([
      'agent@127.0.0.1',
      'sudo',
      '-n',
      '-H',
      '-u',
      'root',
      '--',
    ]);
    expect(sshExecPrefix(t, { user: 'x;reboot', interactive: false })).toContain("'x;reboot'");
  });
});

describe('isHostKeyMismatch', () => {
  it("recognises ssh's refusals", () => {
    expect(isHostKeyMismatch('@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@')).toBe(true);
    expect(isHostKeyMismatch('Host key verification failed.')).toBe(true);
    expect(isHostKeyMismatch('Connection refused')).toBe(false);
  });
});

describe('masterArgv', () => {
  it('makes a plain master (controlmaster true, as ssh itself resolves the options), never the asking kind', () => {
    const argv = masterArgv(t);
    expect(argv).not.toContain('-M');
    expect(argv.slice(-3)).toEqual(['-N', '-f', 'agent@127.0.0.1']);
    // `ssh -G` prints the configuration the options resolve to, without connecting anywhere.
    const resolved = spawnSync('ssh', [...argv.slice(1, -3), '-G', 'agent@127.0.0.1'], { encoding: 'utf8' });
    expect(resolved.status, resolved.stderr).toBe(0);
    expect(resolved.stdout).toMatch(/^controlmaster true$/m);
    expect(resolved.stdout).toMatch(/^controlpersist 600$/m);
  });
});

describe('the key exchange', () => {
  it('offers curve25519 first and not the post-quantum hybrid (its cost under TCG), in a list the host ssh accepts', () => {
    // `ssh -G` resolves the options as a connection would, without connecting: an unknown name fails here.
    const r = spawnSync('ssh', ['-G', ...masterArgv(t).slice(1)], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const kex = r.stdout.split('\n').find((l) => l.startsWith('kexalgorithms '));
    expect(kex?.split(' ')[1]?.split(',')[0]).toBe('curve25519-sha256');
    expect(kex).not.toMatch(/sntrup/);
  });
});
