import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  forkIdentityScript,
  GUEST_PROGRAMS,
  IDENTITY_HELPER_DIR,
  IDENTITY_PROBE,
  identityHelperArmScript,
  identityRelay,
  SSHD_NO_REEXEC,
  MAC_RE,
  MACHINE_ID_RE,
  parseIdentityAnswer,
  randomMac,
  randomMachineId,
  vmHostname,
} from './fork-identity.js';

const KEY = ['-----BEGIN OPENSSH PRIVATE KEY-----', 'b3BlbnNzaC1rZXktdjEAAAAABG5vbmU=', '-----END OPENSSH PRIVATE KEY-----', ''].join('\n');
const BASE = { hostname: 'h', mac: '52:54:00:01:02:03', hostPublicKey: 'ssh-ed25519 AAAA k', privateKey: KEY };

/** The root script (what the helper or sudo runs), read from the relay's stdin. */
function rootScript(id: Parameters<typeof forkIdentityScript>[0]): string {
  return forkIdentityScript(id).input;
}

/** Runs the login user's part as the guest would, with `sudo` a stand-in on PATH that says it ran. */
function runRelay(command: string, input: string, shell: string, env: Record<string, string> = {}) {
  const bin = mkdtempSync(join(tmpdir(), 'sdesk-fake-sudo-'));
  try {
    writeFileSync(join(bin, 'sudo'), '#!/bin/sh\necho fake-sudo-ran\nexec sh\n', { mode: 0o755 });
    return spawnSync(shell, ['-c', command], {
      input,
      encoding: 'utf8',
      timeout: 10_000,
      env: { PATH: `${bin}:${process.env.PATH}`, HOME: tmpdir(), ...env },
    });
  } finally {
    rmSync(bin, { recursive: true, force: true });
  }
}

describe('fork identity', () => {
  it('MACs are in QEMU’s 52:54:00 range and differ between forks', () => {
    const macs = Array.from({ length: 20 }, randomMac);
    expect(macs.every((m) => MAC_RE.test(m) && m.startsWith('52:54:00:'))).toBe(true);
    expect(new Set(macs).size).toBeGreaterThan(1);
  });

  it('hostnames are what provision makes: sdesk-NAME, DNS-safe', () => {
    expect(vmHostname('Fork_1')).toBe('sdesk-fork-1');
  });

  it('the script is valid shell; the private key is in the root script on stdin, never in the command (an argv)', () => {
    const exec = forkIdentityScript({
      hostname: 'sdesk-f-1',
      mac: '52:54:00:01:02:03',
      hostPublicKey: 'ssh-ed25519 AAAAC3 sdesk-vm-f-1\n',
      privateKey: KEY,
    });
    expect(spawnSync('sh', ['-n', '-c', exec.command]).status).toBe(0);
    expect(spawnSync('bash', ['-n', '-c', exec.command]).status).toBe(0);
    expect(spawnSync('sh', ['-n', '-c', IDENTITY_PROBE]).status).toBe(0);
    const root = exec.input;
    expect(spawnSync('sh', ['-n', '-c', root]).status).toBe(0);
    expect(root).not.toContain('sudo');
    expect(exec.command).not.toContain('PRIVATE KEY');
    expect(root).toContain(
      "printf '%s\\n' '-----BEGIN OPENSSH PRIVATE KEY-----' b3BlbnNzaC1rZXktdjEAAAAABG5vbmU= '-----END OPENSSH PRIVATE KEY-----' > $k",
    );
    expect(root).toContain("printf '%s\\n' 'ssh-ed25519 AAAAC3 sdesk-vm-f-1' > $k.pub");
    // The MAC changes in line on the same channel (arp_notify announces it), then is read back.
    expect(root).not.toContain('setsid');
    const lines = root.trim().split('\n');
    const arp = lines.findIndex((l) => l.startsWith('echo 1 ') && l.includes('/arp_notify'));
    const change = lines.indexOf('ip link set dev $i address 52:54:00:01:02:03');
    expect(arp).toBeGreaterThan(0);
    expect(change).toBeGreaterThan(arp);
    expect(lines.slice(-4, -1)).toEqual([
      'read -r h < /proc/sys/kernel/hostname; read -r a < /sys/class/net/$i/address',
      'echo "identity=$h $a"',
      'echo identity-ok',
    ]);
    // A helper's directory goes after the answer, with stdout closed first (the channel need not wait).
    expect(lines.at(-1)).toBe(`if [ -d ${IDENTITY_HELPER_DIR} ]; then exec >/dev/null 2>&1; rm -rf ${IDENTITY_HELPER_DIR}; fi`);
  });

  it('refuses a private key that is not one OpenSSH key (it is written into a script)', () => {
    expect(() => forkIdentityScript({ ...BASE, privateKey: "x'; reboot; '" })).toThrow(/not an OpenSSH private key/);
    expect(() => forkIdentityScript({ ...BASE, privateKey: KEY.replace('b3Bl', "b3'Bl") })).toThrow(/not an OpenSSH private key/);
  });

  it("rewrites /etc/hosts' 127.0.1.1 line with the shell alone, as the sed it replaces did", () => {
    const dir = mkdtempSync(join(tmpdir(), 'sdesk-hosts-'));
    try {
      const hosts = join(dir, 'hosts');
      writeFileSync(hosts, '127.0.0.1 localhost\n127.0.1.1\told old\n::1 ip6-localhost\n# last line without newline');
      const lines = rootScript({ ...BASE, hostname: 'sdesk-new' }).split('\n');
      const rewrite = lines.filter((l) => l.startsWith('h=; while') || l === `printf '%s' "$h" > /etc/hosts`);
      expect(rewrite).toHaveLength(2);
      const script = [`NL='`, `'`, ...rewrite].join('\n').replaceAll('/etc/hosts', hosts);
      expect(spawnSync('sh', ['-c', script]).status).toBe(0);
      expect(readFileSync(hosts, 'utf8')).toBe(
        '127.0.0.1 localhost\n127.0.1.1 sdesk-new sdesk-new\n::1 ip6-localhost\n# last line without newline\n',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  describe("the relay: root's part by the template's waiting helper, else sudo", () => {
    let dir: string;
    let helper: ChildProcess | null = null;
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'sdesk-helper-'));
    });
    afterEach(() => {
      helper?.kill('SIGKILL');
      helper = null;
      rmSync(dir, { recursive: true, force: true });
    });
    /** A helper as identityHelperArmScript starts one (its mkfifo/chown/setsid left out: no root here). */
    const startHelper = async () => {
      const h = join(dir, 'h');
      spawnSync('sh', ['-c', `mkdir -m 0700 ${h} && mkfifo -m 0600 ${h}/in ${h}/out`]);
      helper = spawn('sh', ['-c', `echo $$ > ${h}/pid; exec sh < ${h}/in > ${h}/out 2>&1`], { stdio: 'ignore' });
      for (let i = 0; i < 100 && !existsSync(join(h, 'pid')); i++) await new Promise((r) => setTimeout(r, 20));
      return h;
    };

    for (const shell of ['bash', 'sh']) {
      it(`a waiting helper runs the root script, no sudo (${shell})`, async () => {
        const h = await startHelper();
        const r = runRelay(identityRelay(true, h), 'echo "ran-as=$(id -u)"\necho identity-ok\n', shell);
        expect(r.status, r.stderr).toBe(0);
        expect(r.stdout).not.toContain('fake-sudo-ran');
        const answer = parseIdentityAnswer(r.stdout);
        expect(answer).toMatchObject({ via: 'helper', ok: true, home: realpathSync(tmpdir()) });
        expect(r.stdout).toContain(`ran-as=${process.getuid!()}`);
        if (shell === 'bash') expect(Math.abs(answer.clockBefore! - Date.now() / 1000)).toBeLessThan(5);
      });
    }

    it('without a helper (a fork of a running VM, an older template) it is one sudo', () => {
      const r = runRelay(identityRelay(false, join(dir, 'none')), 'echo identity-ok\n', 'bash');
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toContain('fake-sudo-ran');
      expect(parseIdentityAnswer(r.stdout)).toMatchObject({ via: 'sudo', ok: true });
    });

    it('a helper that died is not waited on: its FIFOs are there, its pid is not, so sudo', async () => {
      const h = await startHelper();
      helper!.kill('SIGKILL');
      await new Promise((r) => helper!.once('exit', r));
      const r = runRelay(identityRelay(false, h), 'echo identity-ok\n', 'bash');
      expect(r.status, r.stderr).toBe(0);
      expect(parseIdentityAnswer(r.stdout)).toMatchObject({ via: 'sudo', ok: true });
    });

    it('a root script that stops before its end fails the channel, with its output passed on', async () => {
      const h = await startHelper();
      const r = runRelay(identityRelay(false, h), 'set -e\necho step-1\nfalse\necho identity-ok\n', 'bash');
      expect(r.status).toBe(1);
      expect(r.stdout).toContain('step-1');
      expect(r.stderr).toMatch(/stopped before the end/);
      expect(parseIdentityAnswer(r.stdout).ok).toBe(false);
    });
  });

  it('the helper is armed by one root script: FIFOs only the login user may open, the helper detached', () => {
    const arm = identityHelperArmScript('agent');
    expect(spawnSync('sh', ['-n', '-c', arm]).status).toBe(0);
    expect(arm).toContain(`mkdir -m 0700 ${IDENTITY_HELPER_DIR}`);
    expect(arm).toContain(`mkfifo -m 0600 ${IDENTITY_HELPER_DIR}/in ${IDENTITY_HELPER_DIR}/out`);
    expect(arm).toContain(`chown agent ${IDENTITY_HELPER_DIR} ${IDENTITY_HELPER_DIR}/in ${IDENTITY_HELPER_DIR}/out`);
    expect(arm).toMatch(/setsid sh -c .* < \/dev\/null > \/dev\/null 2>&1 &/);
    expect(() => identityHelperArmScript('a b; reboot')).toThrow(/not a login user name/);
  });

  it("a template's sshd forks connections without re-executing (-r), and is told to re-read its keys after the copy's is written", () => {
    const arm = identityHelperArmScript('agent').split('\n');
    // Only on an sshd that still re-executes (before 9.8), run as ssh.service; a restart that fails is undone.
    expect(arm[1]).toMatch(/^if \[ ! -e \/usr\/lib\/openssh\/sshd-session \] .* systemctl -q is-active ssh\.service/);
    expect(arm).toContain(`  printf '%s\\n' '[Service]' ExecStart= 'ExecStart=/usr/sbin/sshd -D -r $SSHD_OPTS' > ${SSHD_NO_REEXEC}`);
    expect(arm.join('\n')).toMatch(/else\n +rm -f \S+sdesk-no-reexec\.conf; systemctl daemon-reload; systemctl restart ssh\.service/);
    // The helper starts after sshd's restart (which would not touch it, KillMode=process, but in that order).
    expect(arm.findIndex((l) => l.startsWith('setsid'))).toBeGreaterThan(arm.indexOf('fi'));
    const root = rootScript(BASE).split('\n');
    const hup = root.findIndex((l) => l.includes('kill -HUP'));
    expect(root[hup]).toContain(`[ -e ${SSHD_NO_REEXEC} ]`);
    // Right after the key is written: the listener's restart overlaps the rest of the script.
    expect(hup).toBeGreaterThan(root.findIndex((l) => l.endsWith('> $k.pub')));
    expect(hup).toBeLessThan(root.findIndex((l) => l.includes('/proc/sys/kernel/hostname')));
  });

  it('measures the login user’s home before root runs, as measure-home.ts would (cd ~; pwd -P)', () => {
    const home = mkdtempSync(join(tmpdir(), 'sdesk-home-'));
    try {
      const exec = forkIdentityScript(BASE);
      const r = runRelay(exec.command, 'echo identity-ok\n', 'sh', { HOME: home });
      expect(r.status, r.stderr).toBe(0);
      expect(parseIdentityAnswer(r.stdout).home).toBe(realpathSync(home));
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('sets the guest clock (when asked) beside the rest, waited for before the answer; a non-time is refused', () => {
    const root = rootScript({ ...BASE, clockEpoch: 1_800_000_000 }).split('\n');
    expect(root.slice(2, 4)).toEqual(['set -e', 'date -u -s @1800000000 >/dev/null 2>&1 & dp=$!']);
    expect(root.indexOf('wait "$dp"')).toBe(root.indexOf('echo identity-ok') - 3);
    expect(forkIdentityScript({ ...BASE, clockEpoch: 1_800_000_000 }).command).toContain('clock-before=');
    expect(rootScript(BASE)).not.toContain('date -u -s');
    expect(forkIdentityScript(BASE).command).not.toContain('clock-before=');
    expect(() => forkIdentityScript({ ...BASE, clockEpoch: 1.5 })).toThrow(/not a time/);
  });

  it('reads the answer: home, the clock before, the identity read back, and whether it ran to the end', () => {
    const out = 'home=/home/agent\nclock-before=1700000000\nidentity=sdesk-a 52:54:00:01:02:03\nidentity-ok\n';
    expect(parseIdentityAnswer(out)).toEqual({
      home: '/home/agent',
      clockBefore: 1700000000,
      identity: 'sdesk-a 52:54:00:01:02:03',
      ok: true,
      via: null,
    });
    // Cut short (the channel dropped): what is missing is null, and it did not finish.
    expect(parseIdentityAnswer('home=\nclock-before=x\n')).toEqual({ home: null, clockBefore: null, identity: null, ok: false, via: null });
  });

  it('a copy also gets its own machine-id and cloud-init instance id; values that are not ids are refused', () => {
    const base = { ...BASE, hostname: 'sdesk-f-1' };
    const mid = randomMachineId();
    expect(mid).toMatch(MACHINE_ID_RE);
    expect(randomMachineId()).not.toBe(mid);
    const root = rootScript({ ...base, machineId: mid, instanceId: 'sdesk-0123456789abcdef' });
    expect(spawnSync('sh', ['-n', '-c', root]).status).toBe(0);
    expect(root).toContain(`printf '%s\\n' ${mid} > /etc/machine-id`);
    expect(root).toContain("printf '%s\\n' sdesk-0123456789abcdef > /var/lib/cloud/data/instance-id");
    expect(() => forkIdentityScript({ ...base, machineId: '$(reboot)' })).toThrow(/not a machine id/);
    expect(() => forkIdentityScript({ ...base, instanceId: 'a;b' })).toThrow(/not a cloud-init instance id/);
  });

  it('starts only the programs it must (each is an exec under TCG): hostname, MAC read-back and the NIC come from kernel files', () => {
    const root = rootScript({
      ...BASE,
      hostname: 'sdesk-f-1',
      machineId: randomMachineId(),
      instanceId: 'sdesk-0123456789abcdef',
      clockEpoch: 1_800_000_000,
    });
    const started = programsStarted(root);
    // Before: hostname (twice), cut, cat of the pid and of the MAC, sysctl (and ls, grep, head without a
    // default route); then cat and mv of the key, sed of /etc/hosts and date for the clock it had.
    expect([...started].filter((p) => !(GUEST_PROGRAMS as readonly string[]).includes(p))).toEqual([]);
    expect([...started].sort()).toEqual(['date', 'ip', 'perl', 'rm']);
    expect(GUEST_PROGRAMS).toEqual(['date', 'rm', 'ip', 'perl']);
    expect(root).toContain("printf '%s' sdesk-f-1 > /proc/sys/kernel/hostname");
    // sshd is not re-executed on the OpenSSH that reads its host key per connection (Debian 12's 9.2).
    expect(root).toMatch(/if \[ -e \/usr\/lib\/openssh\/sshd-session \] .*kill -HUP/);
  });

  it("finds the default route's NIC from /proc/net/route as `ip route` does", () => {
    const nic = rootScript(BASE)
      .split('\n')
      .filter((l) => /^(i=|while read|if \[ -z "\$i" \]|test -n "\$i")/.test(l));
    expect(nic).toHaveLength(4);
    // Read-only: run on this host and compare with iproute2's answer.
    const ours = spawnSync('sh', ['-c', `${nic.join('\n')}\necho "$i"`], { encoding: 'utf8' });
    const ip = spawnSync('sh', ['-c', 'ip -o -4 route show default | cut -d" " -f5 | head -n1'], { encoding: 'utf8' });
    expect(ours.status).toBe(0);
    if (ip.stdout.trim()) expect(ours.stdout.trim()).toBe(ip.stdout.trim());
    else expect(ours.stdout.trim()).not.toBe('lo');
  });
});

const SHELL_WORDS = new Set(['if', 'then', 'else', 'elif', 'while', 'do', '!']);
const BUILTINS = new Set([
  'set',
  'wait',
  'exec',
  'case',
  'esac',
  "NL='",
  "'",
  'echo',
  'printf',
  'read',
  'kill',
  'umask',
  'cd',
  'pwd',
  'true',
  ':',
  '[',
  'test',
  'fi',
  'done',
  'break',
  'for',
]);

/** The programs a script starts: the first word of each simple command that is no keyword, builtin or assignment. */
function programsStarted(script: string): Set<string> {
  const out = new Set<string>();
  for (const piece of script.split(/\n|;|&&|\|\||\||\$\(|\(/)) {
    const words = piece.trim().split(/\s+/);
    while (words.length && SHELL_WORDS.has(words[0]!)) words.shift();
    const w = words[0];
    if (!w || /^[A-Za-z_][A-Za-z0-9_]*=/.test(w) || BUILTINS.has(w) || w.startsWith(')') || w.startsWith('"')) continue;
    out.add(w);
  }
  return out;
}
