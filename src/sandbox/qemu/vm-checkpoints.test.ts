/**
 * A copy's restore (startCopy: a VM from a template, or a fork) with QEMU and the guest faked away:
 * the memory load is stubbed, and the SSH boundary (ssh-transport.ts, run-argv.ts) answers as a guest
 * would. What is checked is what the host trusts afterwards and how many SSH handshakes it paid for.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

const transport = vi.hoisted(() => ({
  masterAlive: vi.fn<() => Promise<boolean>>(),
  openMaster: vi.fn<() => Promise<{ ok: boolean; log: string }>>(),
  closeMaster: vi.fn<() => Promise<void>>(),
  /** known_hosts as it was each time a master was opened: the key that connection had to present. */
  pinnedAtOpen: [] as string[],
}));
const guest = vi.hoisted(() => ({ answer: { code: 0, stdout: '', stderr: '' } }));

vi.mock('./ssh-transport.js', async (orig) => {
  const real = await orig<typeof import('./ssh-transport.js')>();
  return {
    ...real,
    masterAlive: transport.masterAlive,
    closeMaster: transport.closeMaster,
    openMaster: (t: { knownHosts: string }) => {
      transport.pinnedAtOpen.push(readFileSync(t.knownHosts, 'utf8'));
      return transport.openMaster();
    },
  };
});
vi.mock('../run-argv.js', async (orig) => {
  const real = await orig<typeof import('../run-argv.js')>();
  // Only the identity script's channel reaches here (QEMU's start and the state load are stubbed).
  return { ...real, runArgv: vi.fn(() => Promise.resolve(guest.answer)) };
});

vi.mock('./qemu-process.js', async (orig) => ({ ...(await orig<typeof import('./qemu-process.js')>()), isVmProcess: () => true }));

const { QemuCheckpoints } = await import('./vm-checkpoints.js');

const PRIVATE_KEY = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE=\n-----END OPENSSH PRIVATE KEY-----\n';
const { PhaseTimer } = await import('./phase-timer.js');
import type { VmConfig, VmFiles, VmRun } from './vm-files.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sdesk-copy-'));
  transport.pinnedAtOpen.length = 0;
  transport.masterAlive.mockReset();
  transport.openMaster.mockReset().mockResolvedValue({ ok: true, log: '' });
  transport.closeMaster.mockReset().mockResolvedValue(undefined);
});
afterEach(() => {
  vi.restoreAllMocks();
  rmSync(dir, { recursive: true, force: true });
});

const ALIAS = 'sdesk-vm-copy';
const SOURCE_KEY = 'ssh-ed25519 AAAAsourcekeyofthetemplate';
const NEW_KEY = 'ssh-ed25519 AAAAnewkeyofthecopy';

function fixture() {
  const vm = join(dir, 'vm');
  const source = join(dir, 'template');
  mkdirSync(vm);
  mkdirSync(source);
  writeFileSync(join(source, 'known_hosts'), `sdesk-vm-tpl ${SOURCE_KEY}\n`);
  const files = {
    dir: vm,
    config: join(vm, 'vm.json'),
    run: join(vm, 'run.json'),
    disk: join(vm, 'disk.qcow2'),
    seed: join(vm, 'seed.iso'),
    serialLog: join(vm, 'serial.log'),
    pidFile: join(vm, 'qemu.pid'),
    hostKey: join(vm, 'ssh_host_ed25519_key'),
    knownHosts: join(vm, 'known_hosts'),
    qmpSocket: join(vm, 'qmp.sock'),
    sshControl: join(vm, 'ssh.ctl'),
  } satisfies VmFiles;
  writeFileSync(files.hostKey, PRIVATE_KEY);
  const cfg = { hostKeyAlias: ALIAS, mac: '52:54:00:aa:bb:cc', user: 'agent', bootTimeoutS: 60 } as VmConfig;
  const run: VmRun = { pid: process.pid, pidStart: '1', accel: 'tcg', sshPort: 2222, startedAt: new Date().toISOString() };
  const hardStop = vi.fn(() => Promise.resolve());
  const checkpoints = new QemuCheckpoints({
    root: dir,
    files: () => files,
    config: () => cfg,
    target: (f) => ({
      port: 2222,
      loginUser: 'agent',
      key: join(dir, 'id'),
      knownHosts: f.knownHosts,
      hostKeyAlias: ALIAS,
      controlPath: f.sshControl,
    }),
    liveRun: () => run,
    hardStop,
    start: () => Promise.resolve(),
  });
  // QEMU started, the saved state loaded and the master opened with the source's key: stubbed here.
  const boot = vi.spyOn(checkpoints as unknown as { bootFromMemory: () => Promise<void> }, 'bootFromMemory').mockResolvedValue(undefined);
  const restore = async () => {
    const phases = new PhaseTimer();
    await checkpoints.startCopy(
      files,
      cfg,
      { ref: source, memory: true, sizeBytes: 0 },
      { ramFile: true } as never,
      {
        hostname: 'sdesk-copy',
        hostKey: { privateKey: PRIVATE_KEY, publicKey: `${NEW_KEY} sdesk-vm-copy` },
        instanceId: 'i-1',
        machineId: 'a'.repeat(32),
      },
      {},
      phases,
    );
    return phases.totals();
  };
  return { files, cfg, boot, hardStop, restore };
}

describe('a copy restored from memory (startCopy)', () => {
  it('keeps the one master it opened: the pin moves to the new key without a second SSH handshake', async () => {
    const { files, boot, restore } = fixture();
    guest.answer = {
      code: 0,
      stdout: 'home=/home/agent\nclock-before=1\nidentity=sdesk-copy 52:54:00:aa:bb:cc\nidentity-ok\n',
      stderr: '',
    };
    transport.masterAlive.mockResolvedValue(true);
    const phases = await restore();
    expect(boot).toHaveBeenCalledOnce();
    // Before: the master was closed and opened again only to see the new key (0.6 s under TCG).
    expect(transport.closeMaster).not.toHaveBeenCalled();
    expect(transport.openMaster).not.toHaveBeenCalled();
    expect(phases).not.toHaveProperty('ssh-new-key');
    // Only the copy's own key is trusted from now on: a guest presenting the template's key is refused.
    expect(readFileSync(files.knownHosts, 'utf8')).toBe(`${ALIAS} ${NEW_KEY}\n`);
    expect(readFileSync(files.knownHosts, 'utf8')).not.toContain(SOURCE_KEY);
    expect(() => readFileSync(files.hostKey)).toThrow(/ENOENT/);
    expect(JSON.parse(readFileSync(files.run, 'utf8'))).toMatchObject({ home: { user: 'agent', path: '/home/agent' } });
    // The private host key travels on the channel's stdin (in the root script), never in an argv.
    const { runArgv } = await import('../run-argv.js');
    const [argv, opts] = vi.mocked(runArgv).mock.calls.at(-1)!;
    expect(argv.join(' ')).not.toContain('PRIVATE KEY');
    expect(opts?.input).toContain('b3BlbnNzaC1rZXktdjE=');
  });

  it('a master the identity channel cut is opened again, and then only with the new key pinned', async () => {
    const { files, hardStop, restore } = fixture();
    // The MAC change cut the channel (ssh exit 255) after the key was written.
    guest.answer = { code: 255, stdout: 'home=/home/agent\n', stderr: 'Connection closed' };
    transport.masterAlive.mockResolvedValue(false);
    // The re-check of hostname and MAC runs over a probe connection of its own (also new-key only).
    const probe = await import('../run-argv.js');
    vi.mocked(probe.runArgv)
      .mockResolvedValueOnce(guest.answer)
      .mockResolvedValue({ code: 0, stdout: 'sdesk-copy 52:54:00:aa:bb:cc\n', stderr: '' });
    const phases = await restore();
    expect(transport.openMaster).toHaveBeenCalledOnce();
    expect(transport.pinnedAtOpen).toEqual([`${ALIAS} ${NEW_KEY}\n`]);
    expect(phases).toHaveProperty('ssh-new-key');
    expect(readFileSync(files.knownHosts, 'utf8')).toBe(`${ALIAS} ${NEW_KEY}\n`);
    expect(hardStop).not.toHaveBeenCalled();
  });

  it('a guest that answers the reopened master with another key is stopped, not trusted', async () => {
    const { hardStop, restore } = fixture();
    guest.answer = { code: 255, stdout: '', stderr: 'Connection closed' };
    transport.masterAlive.mockResolvedValue(false);
    transport.openMaster.mockResolvedValue({ ok: false, log: 'Host key verification failed.\n' });
    await expect(restore()).rejects.toThrow(/does not serve the SSH host key pinned for it/);
    expect(hardStop).toHaveBeenCalledOnce();
  });
});
