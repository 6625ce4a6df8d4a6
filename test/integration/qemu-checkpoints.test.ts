/**
 * QemuProvider.checkpoints against real QEMU (TCG here): one VM booted once for the file, then a
 * checkpoint with memory, restore, two forks, pause/resume, a broken checkpoint, and a disk-only
 * checkpoint of the stopped VM. Called at the provider level (the app's bookkeeping is tested apart).
 * Slow; SANDBOX_DESK_SKIP_SLOW=1 skips it.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CheckpointArtifact, ProgressEvent, ProvisionSpec, SandboxEnvironment, SandboxRef } from '../../src/sandbox/provider.js';
import { QemuProvider } from '../../src/sandbox/qemu/qemu-provider.js';
import { imageSearchPath } from '../../src/sandbox/qemu/vm-image.js';
import { runArgv } from '../../src/sandbox/run-argv.js';
import { qemuProcessesOf, uniqueName } from './helpers.js';
import { useSharedVmTemplate } from './vm-template-fixture.js';

const SKIP = process.env.SANDBOX_DESK_SKIP_SLOW === '1';
const BOOT = 1_600_000;

describe.skipIf(SKIP)('qemu checkpoints, restore, fork, pause (slow: real VMs)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sdesk-ckq-'));
  const ckRoot = join(dataDir, 'checkpoints');
  const provider = new QemuProvider({ dataDir });
  const name = uniqueName('ck');
  const marker = `sdesk-marker-${name}`;
  const refs: SandboxRef[] = [];
  let ref: SandboxRef;

  const spec = (n: string): ProvisionSpec => ({
    name: n,
    image: 'debian-test',
    user: null,
    mounts: [],
    env: {},
    // 512 MiB: three guests at once under TCG on a shared 2-core host; accel tcg: KVM does not work here.
    options: { memory: '512', accel: 'tcg', cpus: '1', bootTimeout: '1500' },
    labels: {},
    resourceName: n,
  });
  const refOf = (s: ProvisionSpec, backendRef: string, user: string | null): SandboxRef => ({
    name: s.name,
    backendRef,
    image: 'debian-test',
    user,
    mounts: [],
    env: {},
    options: s.options,
  });
  /** Runs a command in the VM over SSH; `timeoutMs` kills it (used to show a paused VM does not answer). */
  const envs = new Map<string, SandboxEnvironment>();
  const sh = async (r: SandboxRef, command: string, timeoutMs = 120_000) => {
    // One environment per incarnation (connecting measures the home, which a paused VM would not answer).
    const inc = (await provider.status(r)).incarnation;
    let env = envs.get(r.name);
    if (!env || env.incarnation !== inc) {
      env = await provider.createEnvironment({ cwd: '~', sandbox: r });
      envs.set(r.name, env);
    }
    return runArgv([...(env.execPrefix({ interactive: false }) ?? []), command], { timeoutMs });
  };
  const out = async (r: SandboxRef, command: string): Promise<string> => {
    const res = await sh(r, command);
    expect(res.code, res.stderr).toBe(0);
    return res.stdout.trim();
  };
  let n = 0;
  const ckSpec = (memory: boolean) => {
    const id = `c${++n}${name.replace(/[^a-z0-9]/g, '')}`;
    const dir = join(ckRoot, id);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return { id, memory, dir, labels: {} };
  };

  beforeAll(async () => {
    const found = imageSearchPath(dataDir).some((d) => existsSync(join(d, 'debian-test', 'image.json')));
    if (!found) throw new Error('the qemu tests need the debian-test VM image: run `npm run setup` (it builds it)');
    // Booting is not what this file tests: its VM is restored from the run's shared template (seconds).
    await useSharedVmTemplate(dataDir);
    const s = spec(name);
    const made = await provider.provision(s);
    ref = refOf(s, made.backendRef!, made.user);
    refs.push(ref);
    await provider.start(ref);
  }, BOOT);

  afterAll(async () => {
    for (const r of refs) await provider.remove(r, { force: true }).catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  }, 120_000);

  let withMemory: CheckpointArtifact;
  let markerPid: string;

  it('memory support: yes, except with shared folders (virtiofs), which is refused with the reason', async () => {
    expect(await provider.checkpoints.memorySupport(ref)).toEqual({ supported: true });
    const shared = { ...ref, mounts: [{ hostPath: dataDir, sandboxPath: '/mnt/x' }] };
    expect((await provider.checkpoints.memorySupport(shared)).reason).toMatch(/virtiofs/);
    await expect(provider.checkpoints.checkpoint(shared, ckSpec(true))).rejects.toMatchObject({ code: 'unsupported' });
  });

  it(
    'checkpoint with memory of a running VM: progress in MiB, the VM keeps running, the artifact says the memory size',
    async () => {
      markerPid = await out(ref, `setsid nohup bash -c 'exec -a ${marker} sleep 1000000' </dev/null >/dev/null 2>&1 & echo $!`);
      expect(markerPid).toMatch(/^\d+$/);
      await out(ref, `echo kept > /tmp/${marker}.txt`);
      const events: ProgressEvent[] = [];
      const before = await provider.status(ref);
      withMemory = await provider.checkpoints.checkpoint(ref, ckSpec(true), { progress: (e) => events.push(e) });
      expect(withMemory).toMatchObject({ memory: true, details: { guestMemoryMiB: 512 } });
      expect(withMemory.sizeBytes).toBeGreaterThan(0);
      expect(events.some((e) => /^saved \d+\/\d+ MiB of guest memory$/.test(e.message))).toBe(true);
      const after = await provider.status(ref);
      expect(after.state).toBe('running');
      expect(after.incarnation).toBe(before.incarnation); // the same QEMU, it only paused for the save
      expect(await out(ref, 'echo still-here')).toBe('still-here');
      expect(await provider.checkpoints.verify(withMemory)).toEqual({ ok: true });
    },
    BOOT,
  );

  it(
    'restore: the process started before the checkpoint runs again with the same PID, the file is back, the incarnation changed',
    async () => {
      const before = await provider.status(ref);
      await out(ref, `kill ${markerPid}; rm /tmp/${marker}.txt; echo gone`);
      expect((await sh(ref, `test -e /proc/${markerPid}`)).code).toBe(1);
      const events: ProgressEvent[] = [];
      await provider.checkpoints.restore(ref, withMemory, { progress: (e) => events.push(e) });
      const after = await provider.status(ref);
      expect(after.state).toBe('running');
      expect(after.incarnation).not.toBe(before.incarnation);
      expect(await out(ref, `tr '\\0' ' ' < /proc/${markerPid}/cmdline`)).toMatch(new RegExp(`^${marker}`));
      expect(await out(ref, `cat /tmp/${marker}.txt`)).toBe('kept');
      // the guest clock stood still while saved: the jump is said
      expect(events.some((e) => e.step === 'clock' && e.level === 'warning' && /behind/.test(e.message))).toBe(true);
      expect(qemuProcessesOf(ref.backendRef!)).toHaveLength(1);
    },
    BOOT,
  );

  it('restore of a checkpoint onto another sandbox is refused', async () => {
    const other = { ...ref, name: 'other', backendRef: join(dataDir, 'qemu', 'vms', 'other') };
    mkdirSync(other.backendRef, { recursive: true });
    writeFileSync(join(other.backendRef, 'vm.json'), JSON.stringify({ version: 1, user: 'agent', hostKeyAlias: 'x', base: {} }));
    await expect(provider.checkpoints.restore(other, withMemory)).rejects.toThrow(/taken of .*, not of other/);
    rmSync(other.backendRef, { recursive: true, force: true });
  });

  it(
    'fork ×2 from one checkpoint: each answers on its own port with its own hostname, MAC and host key, and they diverge',
    async () => {
      const forks: SandboxRef[] = [];
      for (const i of [1, 2]) {
        const s = { ...spec(`${name}-f${i}`) };
        const made = await provider.checkpoints.fork(withMemory, s);
        const r = refOf(s, made.backendRef!, made.user);
        refs.push(r);
        forks.push(r);
      }
      const [a, b] = forks as [SandboxRef, SandboxRef];
      const ids = await Promise.all(
        [ref, a, b].map((r) => out(r, 'echo "$(hostname) $(cat /sys/class/net/$(ip -o -4 route show default | cut -d" " -f5)/address)"')),
      );
      expect(ids[1]).toMatch(new RegExp(`^sdesk-${a.name} `));
      expect(ids[2]).toMatch(new RegExp(`^sdesk-${b.name} `));
      expect(new Set(ids.map((x) => x.split(' ')[1])).size).toBe(3); // three different MACs
      const ports = await Promise.all([ref, a, b].map(async (r) => (await provider.status(r)).details?.sshPort));
      expect(new Set(ports).size).toBe(3);
      // each fork pins its own host key, not the source's
      const pins = [ref, a, b].map((r) => readFileSync(join(r.backendRef!, 'known_hosts'), 'utf8').split(' ')[2]);
      expect(new Set(pins).size).toBe(3);
      // the memory came along: the marker process runs in both forks
      for (const f of forks) expect(await out(f, `tr '\\0' ' ' < /proc/${markerPid}/cmdline`)).toMatch(new RegExp(`^${marker}`));
      await out(a, `echo only-in-a > /tmp/${marker}.a`);
      expect((await sh(b, `test -e /tmp/${marker}.a`)).code).toBe(1);
      expect((await sh(ref, `test -e /tmp/${marker}.a`)).code).toBe(1);
      for (const f of forks) await provider.remove(f, { force: true });
    },
    BOOT * 2,
  );

  it(
    'pause: status paused and a command does not complete; resume: it does',
    async () => {
      await provider.checkpoints.pause(ref);
      expect((await provider.status(ref)).state).toBe('paused');
      const frozen = await sh(ref, 'echo awake', 8_000);
      expect(frozen.stdout).not.toContain('awake'); // killed by the timeout, never answered
      await provider.checkpoints.resume(ref);
      expect((await provider.status(ref)).state).toBe('running');
      expect(await out(ref, 'echo awake')).toBe('awake');
    },
    BOOT,
  );

  it('a checkpoint whose files were deleted behind our back verifies broken, and restore says so', async () => {
    const gone = { ...withMemory, ref: join(ckRoot, 'copy') };
    mkdirSync(gone.ref);
    expect(await provider.checkpoints.verify(gone)).toMatchObject({ ok: false, detail: expect.stringMatching(/is gone/) });
    await expect(provider.checkpoints.restore(ref, gone)).rejects.toMatchObject({ code: 'not_found' });
    await provider.checkpoints.removeCheckpoint(gone);
    expect(existsSync(gone.ref)).toBe(false);
  });

  it(
    'disk-only checkpoint of the stopped VM, restore boots it; a memory checkpoint restores onto the stopped VM; removeCheckpoint deletes the files',
    async () => {
      await out(ref, `echo on-disk > ~/${marker}.disk; sync`);
      await provider.stop(ref);
      const events: ProgressEvent[] = [];
      const diskOnly = await provider.checkpoints.checkpoint(ref, ckSpec(false), { progress: (e) => events.push(e) });
      expect(diskOnly.memory).toBe(false);
      expect(events.some((e) => /stopped: saving its disk only/.test(e.message))).toBe(true);
      await expect(provider.checkpoints.checkpoint(ref, ckSpec(true))).rejects.toMatchObject({ code: 'sandbox_not_running' });
      // The stopped VM takes the checkpoint with memory from before the file was written: running again
      // without a boot, the file not there. (One boot in this test, not two: each is minutes under TCG.)
      await provider.checkpoints.restore(ref, withMemory);
      expect((await provider.status(ref)).state).toBe('running');
      expect((await sh(ref, `test -e ~/${marker}.disk`)).code).toBe(1);
      expect(await out(ref, `tr '\\0' ' ' < /proc/${markerPid}/cmdline`)).toMatch(new RegExp(`^${marker}`));
      // The disk-only checkpoint replaces the running VM and boots from its disk: the file is back.
      await provider.checkpoints.restore(ref, diskOnly);
      expect((await provider.status(ref)).state).toBe('running');
      expect(await out(ref, `cat ~/${marker}.disk`)).toBe('on-disk');
      expect(qemuProcessesOf(ref.backendRef!)).toHaveLength(1);
      await provider.checkpoints.removeCheckpoint(diskOnly);
      expect(existsSync(diskOnly.ref)).toBe(false);
      expect(await provider.checkpoints.verify(diskOnly)).toMatchObject({ ok: false });
      await provider.checkpoints.removeCheckpoint(withMemory);
      expect(existsSync(withMemory.ref)).toBe(false);
    },
    BOOT * 2,
  );
});
