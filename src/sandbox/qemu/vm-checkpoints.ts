/**
 * The QEMU backend's checkpoints (CheckpointCapability): what one holds, and restore, fork and pause.
 *
 * A checkpoint is a folder (the app's CheckpointSpec.dir): `disk.qcow2`, a copy of the VM's overlay
 * taken while the guest is paused (so it is frozen: nothing writes it again; it still names the shared
 * base image as its backing file), `memory.bin` when the memory was saved (QEMU's migration stream, see
 * vm-migration.ts), the source's pinned `known_hosts`, and `checkpoint.json` (the VM's shape, its
 * accel, where it came from). A VM with shared folders (virtiofs) cannot save its memory: QEMU refuses
 * to migrate vhost-user devices, so memorySupport says so and only disk-only checkpoints work there.
 *
 * Restore and fork copy the frozen overlay rather than layering a new overlay on it: the app removes a
 * checkpoint whenever the user asks, and a VM whose backing file vanished would read garbage. The
 * copy costs the overlay's size (the guest's changes, not the image), and `cp --reflink=auto` makes it
 * free on filesystems that can share extents.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SandboxDeskError } from '../../shared/errors.js';
import type {
  CheckpointArtifact,
  CheckpointCapability,
  CheckpointSpec,
  LifecycleContext,
  ProgressEvent,
  ProvisionResult,
  ProvisionSpec,
  SandboxRef,
} from '../provider.js';
import { runArgv } from '../run-argv.js';
import { writeSeedIso } from './cloud-init-seed.js';
import { forkIdentityScript, IDENTITY_PROBE, randomMachineId, randomMac, vmHostname } from './fork-identity.js';
import { freeLoopbackPort } from './free-port.js';
import { qemuArgv } from './qemu-argv.js';
import { isPortClash, isVmProcess, launchQemu, processStartTime } from './qemu-process.js';
import { netdevPolicySuffix, readVmNetwork, writeVmNetwork } from './vm-network.js';
import { qmpCommand } from './qmp-client.js';
import { serialTail } from './serial-log.js';
import { ensureKeyPair } from './ssh-keys.js';
import { closeMaster, isHostKeyMismatch, sshOptions, sshProbe, type SshTarget } from './ssh-transport.js';
import { ensureSocketDir, readJson, vmFiles, writeJson, type VmConfig, type VmFiles, type VmRun } from './vm-files.js';
import { loadVmState, saveVmState, vmRunState } from './vm-migration.js';
import { guestMounts, sharesFor } from './virtiofs.js';

/** What the provider lends this module: its own view of a VM's files, config, SSH target and boots. */
export interface VmHost {
  root: string;
  files(ref: SandboxRef): VmFiles;
  config(files: VmFiles): VmConfig;
  target(files: VmFiles, cfg: VmConfig, port: number): SshTarget;
  liveRun(files: VmFiles): VmRun | null;
  hardStop(files: VmFiles, run: VmRun): Promise<void>;
  start(ref: SandboxRef, ctx?: LifecycleContext): Promise<void>;
}

/** checkpoint.json */
export interface CheckpointMeta {
  version: 1;
  /** The VM directory it was taken of: restore goes back there only. */
  sourceDir: string;
  sourceName: string;
  memory: boolean;
  /** The accel the memory was saved under; a saved state loads only under the same one. */
  accel: 'kvm' | 'tcg' | null;
  cfg: VmConfig;
  createdAt: string;
}

const CK = { meta: 'checkpoint.json', disk: 'disk.qcow2', memory: 'memory.bin', knownHosts: 'known_hosts' } as const;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const noProgress = (): void => undefined;

/** Bytes a file really takes (a sparse disk copy takes less than its length). */
function usedBytes(path: string): number {
  try {
    const st = statSync(path);
    return Math.min(st.size, st.blocks * 512);
  } catch {
    return 0;
  }
}

export async function copyFile(from: string, to: string): Promise<void> {
  const r = await runArgv(['cp', '--reflink=auto', '--sparse=always', from, to], { timeoutMs: 30 * 60_000 });
  if (r.code !== 0) {
    rmSync(to, { force: true });
    throw new SandboxDeskError('backend_unavailable', `could not copy ${from} to ${to}: ${r.stderr.trim() || `exit ${r.code}`}`, {
      hint: 'check the free space there (df)',
    });
  }
}

export class QemuCheckpoints implements CheckpointCapability {
  constructor(private readonly host: VmHost) {}

  memorySupport(ref: SandboxRef): Promise<{ supported: boolean; reason?: string }> {
    if (ref.mounts.length > 0) {
      return Promise.resolve({
        supported: false,
        reason:
          'the VM shares host folders (virtiofs), and QEMU cannot save the memory of a VM with vhost-user devices; checkpoint it without --memory (disk-only)',
      });
    }
    return Promise.resolve({ supported: true });
  }

  // ---- checkpoint ---------------------------------------------------------------------------------

  async checkpoint(ref: SandboxRef, spec: CheckpointSpec, ctx: LifecycleContext = {}): Promise<CheckpointArtifact> {
    const progress = ctx.progress ?? noProgress;
    if (spec.memory) {
      const support = await this.memorySupport(ref);
      if (!support.supported) throw new SandboxDeskError('unsupported', `cannot save ${ref.name}'s memory: ${support.reason}`);
    }
    const files = this.host.files(ref);
    const cfg = this.host.config(files);
    const run = this.host.liveRun(files);
    if (spec.memory) {
      if (!run) {
        throw new SandboxDeskError('sandbox_not_running', `${ref.name} is stopped: there is no memory to save`, {
          hint: 'checkpoint it without --memory (disk-only), or start it first',
        });
      }
    }
    mkdirSync(spec.dir, { recursive: true, mode: 0o700 });
    const disk = join(spec.dir, CK.disk);
    const memory = join(spec.dir, CK.memory);
    ctx.signal?.throwIfAborted();
    try {
      if (run) {
        const before = await vmRunState(files.qmpSocket).catch(() => 'unknown');
        if (!spec.memory) {
          // Disk-only of a running guest: what it wrote but still caches goes to the disk first.
          await sshProbe(this.host.target(files, cfg, run.sshPort), 'sync', 60_000);
        }
        progress({ step: 'pause', message: `pausing the VM (${cfg.memoryMiB} MiB of guest memory) to save a consistent state` });
        await qmpCommand(files.qmpSocket, 'stop'); // also flushes the disks: the overlay file is whole now
        try {
          progress({ step: 'disk', message: `copying the disk overlay (${Math.round(usedBytes(files.disk) / 2 ** 20)} MiB)` });
          await copyFile(files.disk, disk);
          ctx.signal?.throwIfAborted();
          if (spec.memory) await saveVmState({ qmpSocket: files.qmpSocket, file: memory, progress, signal: ctx.signal });
        } finally {
          // Back as it was: a VM the user had paused stays paused (resume `cont`s it, which also takes back
          // the disks a completed migration released).
          if (before === 'running') await qmpCommand(files.qmpSocket, 'cont');
        }
      } else {
        progress({ step: 'disk', message: 'the VM is stopped: saving its disk only' });
        await copyFile(files.disk, disk);
      }
      ctx.signal?.throwIfAborted();
      if (existsSync(files.knownHosts)) writeFileSync(join(spec.dir, CK.knownHosts), readFileSync(files.knownHosts), { mode: 0o600 });
      const meta: CheckpointMeta = {
        version: 1,
        sourceDir: resolve(files.dir),
        sourceName: ref.name,
        memory: spec.memory,
        accel: run?.accel ?? null,
        cfg,
        createdAt: new Date().toISOString(),
      };
      writeJson(join(spec.dir, CK.meta), meta); // last: a folder without it is half-made, never listed as a checkpoint
      const sizeBytes = usedBytes(disk) + usedBytes(memory);
      progress({
        step: 'done',
        message: `checkpoint saved (${Math.round(sizeBytes / 2 ** 20)} MiB${spec.memory ? ', with memory' : ', disk only'})`,
      });
      return {
        ref: spec.dir,
        memory: spec.memory,
        sizeBytes,
        details: {
          guestMemoryMiB: cfg.memoryMiB,
          cpus: cfg.cpus,
          accel: meta.accel,
          source: ref.name,
          diskOnlyReason: spec.memory ? null : run ? 'asked without memory' : 'the VM was stopped',
        },
      };
    } catch (err) {
      removeCheckpointFiles(spec.dir);
      throw err;
    }
  }

  // ---- restore ------------------------------------------------------------------------------------

  async restore(ref: SandboxRef, artifact: CheckpointArtifact, ctx: LifecycleContext = {}): Promise<ProvisionResult> {
    const progress = ctx.progress ?? noProgress;
    const meta = this.meta(artifact);
    const files = this.host.files(ref);
    const cfg = this.host.config(files);
    if (resolve(meta.sourceDir) !== resolve(files.dir)) {
      throw new SandboxDeskError('invalid_input', `the checkpoint was taken of ${meta.sourceName}, not of ${ref.name}`, {
        hint: `fork it into a new sandbox instead: sandbox fork ${meta.sourceName} CHECKPOINT --as NEW`,
      });
    }
    const run = this.host.liveRun(files);
    if (run) {
      progress({ step: 'shutdown', message: `stopping the running VM (pid ${run.pid}); its current state is dropped` });
      await this.host.hardStop(files, run);
    }
    await closeMaster(this.host.target(files, cfg, 0));
    ctx.signal?.throwIfAborted();
    progress({ step: 'disk', message: 'putting the checkpoint disk back' });
    await copyFile(join(artifact.ref, CK.disk), `${files.disk}.restore`);
    renameSync(`${files.disk}.restore`, files.disk);
    const result = { backendRef: files.dir, user: cfg.user, image: cfg.base.name ?? cfg.base.disk };
    if (!artifact.memory) {
      progress({ step: 'boot', message: 'a disk-only checkpoint: booting it' });
      await this.host.start(ref, ctx);
      return result;
    }
    await this.bootFromMemory(files, { ...meta.cfg, hostKeyAlias: cfg.hostKeyAlias, mac: cfg.mac }, meta, artifact, ctx);
    await this.fixClock(this.host.target(files, cfg, this.host.liveRun(files)!.sshPort), progress);
    return result;
  }

  // ---- fork ---------------------------------------------------------------------------------------

  async fork(artifact: CheckpointArtifact, spec: ProvisionSpec, ctx: LifecycleContext = {}): Promise<ProvisionResult> {
    const progress = ctx.progress ?? noProgress;
    const meta = this.meta(artifact);
    if (artifact.memory && spec.mounts.length > 0) {
      throw new SandboxDeskError(
        'unsupported',
        'a fork with memory cannot share host folders (virtiofs cannot be restored into a running guest)',
        {
          hint: 'fork without shared folders, or from a disk-only checkpoint',
        },
      );
    }
    const dir = join(this.host.root, 'vms', spec.name);
    const files = vmFiles(dir);
    if (existsSync(dir)) {
      if (this.host.liveRun(files))
        throw new SandboxDeskError('name_taken', `a VM is still running from ${dir}`, { hint: 'choose another name' });
      rmSync(dir, { recursive: true, force: true });
    }
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const hostKeyAlias = `sdesk-vm-${spec.name}`;
    const cfg: VmConfig = { ...meta.cfg, sshPort: null, hostKeyAlias, mac: randomMac() };
    const hostname = vmHostname(spec.name);
    const ref: SandboxRef = {
      name: spec.name,
      backendRef: dir,
      image: cfg.base.name ?? cfg.base.disk,
      user: cfg.user,
      mounts: spec.mounts,
      env: spec.env,
      options: spec.options,
    };
    try {
      progress({ step: 'disk', message: `copying the checkpoint disk for ${spec.name}` });
      await copyFile(join(artifact.ref, CK.disk), files.disk);
      ctx.signal?.throwIfAborted();
      // Its own identity, so forks never collide: host key (pinned), hostname, MAC, instance id, port.
      const appKey = await ensureKeyPair(join(this.host.root, 'id_ed25519'), 'sandbox-desk');
      const hostKey = await ensureKeyPair(files.hostKey, hostKeyAlias);
      const instanceId = `sdesk-${randomBytes(8).toString('hex')}`;
      await writeSeedIso(files.seed, {
        instanceId,
        hostname,
        user: cfg.user,
        authorizedKey: appKey.publicKey,
        hostKey: { privateKey: hostKey.privateKey, publicKey: hostKey.publicKey },
        mounts: guestMounts(sharesFor(files, spec.mounts)),
      });
      writeJson(files.config, cfg);
      // The network policy, fail-closed until the app applies the fork's own (a mode is a boot-time
      // setting for QEMU): a source that was not open gives a fork that starts with no route out.
      if (readVmNetwork(meta.sourceDir).mode !== 'open') writeVmNetwork(dir, { mode: 'offline', socket: null });
      const ownPin = `${hostKeyAlias} ${hostKey.publicKey.split(' ').slice(0, 2).join(' ')}\n`;
      if (!artifact.memory) {
        writeFileSync(files.knownHosts, ownPin, { mode: 0o600 });
        rmSync(files.hostKey, { force: true });
        progress({ step: 'boot', message: 'a disk-only checkpoint: booting the fork' });
        await this.host.start(ref, ctx);
        return { backendRef: dir, user: cfg.user, image: ref.image };
      }
      await this.startCopy(files, cfg, artifact, meta, { hostname, hostKey, instanceId, machineId: randomMachineId() }, ctx);
      return { backendRef: dir, user: cfg.user, image: ref.image };
    } catch (err) {
      const run = this.host.liveRun(files);
      if (run) await this.host.hardStop(files, run);
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  /**
   * A copy of a memory state becomes its own machine (a fork, or a VM made from a template): QEMU loads
   * the state into the VM in `files` (its disk, seed and vm.json in place), then, over SSH pinned to
   * the *source's* known host key (never trusted blindly), the guest is given the copy's own host key,
   * hostname, MAC, machine-id and cloud-init instance id; known_hosts is re-pinned to the new key and
   * the answer checked, and the guest clock is set. The private host key file is removed afterwards (the
   * seed keeps it for later boots). On failure the VM is stopped; the caller removes or reuses its files.
   */
  async startCopy(
    files: VmFiles,
    cfg: VmConfig,
    artifact: CheckpointArtifact,
    meta: CheckpointMeta,
    identity: { hostname: string; hostKey: { privateKey: string; publicKey: string }; instanceId: string; machineId: string },
    ctx: LifecycleContext,
  ): Promise<void> {
    const progress = ctx.progress ?? noProgress;
    const { hostname, hostKey } = identity;
    // The loaded guest still holds the source's host key: first pin that one (known, never trusted blindly).
    const sourceKey = sourceHostKey(join(artifact.ref, CK.knownHosts));
    writeFileSync(files.knownHosts, `${cfg.hostKeyAlias} ${sourceKey}\n`, { mode: 0o600 });
    await this.bootFromMemory(files, cfg, meta, artifact, ctx);
    const run = this.host.liveRun(files)!;
    const target = this.host.target(files, cfg, run.sshPort);
    try {
      progress({ step: 'identity', message: `giving the copy its own host key, hostname ${hostname}, MAC ${cfg.mac} and machine-id` });
      const script = forkIdentityScript({
        hostname,
        mac: cfg.mac!,
        hostPublicKey: hostKey.publicKey,
        machineId: identity.machineId,
        instanceId: identity.instanceId,
      });
      const r = await runArgv(['ssh', ...sshOptions(target), '-o', 'ControlPath=none', '-T', `${target.loginUser}@127.0.0.1`, script], {
        input: hostKey.privateKey,
        timeoutMs: 90_000,
      });
      // The MAC change may cut the connection after the last step: the check below is what counts.
      if (r.code !== 0 && !r.stdout.includes('identity-ok') && r.code !== 255) {
        throw new SandboxDeskError('boot_failed', `could not give the copy its own identity: ${r.stderr.trim() || `exit ${r.code}`}`);
      }
      writeFileSync(files.knownHosts, `${cfg.hostKeyAlias} ${hostKey.publicKey.split(' ').slice(0, 2).join(' ')}\n`, { mode: 0o600 });
      rmSync(files.hostKey, { force: true });
      await this.checkIdentity(target, hostname, cfg.mac!, Date.now() + cfg.bootTimeoutS * 1000);
      await this.fixClock(target, progress);
    } catch (err) {
      await this.host.hardStop(files, run);
      throw err;
    }
  }

  // ---- verify / remove ------------------------------------------------------------------------------

  verify(artifact: CheckpointArtifact): Promise<{ ok: boolean; detail?: string }> {
    const meta = readJson<CheckpointMeta>(join(artifact.ref, CK.meta));
    const missing = (what: string) => Promise.resolve({ ok: false, detail: `${what} is gone` });
    if (!meta) return missing(`the checkpoint's description ${join(artifact.ref, CK.meta)}`);
    if (!existsSync(join(artifact.ref, CK.disk))) return missing(`the checkpoint's disk ${join(artifact.ref, CK.disk)}`);
    if (artifact.memory && !existsSync(join(artifact.ref, CK.memory))) return missing(`the saved memory ${join(artifact.ref, CK.memory)}`);
    if (!existsSync(meta.cfg.base.disk)) return missing(`the base image ${meta.cfg.base.disk} the disk is layered on`);
    return Promise.resolve({ ok: true });
  }

  removeCheckpoint(artifact: CheckpointArtifact): Promise<void> {
    removeCheckpointFiles(artifact.ref);
    return Promise.resolve();
  }

  // ---- pause / resume -------------------------------------------------------------------------------

  async pause(ref: SandboxRef): Promise<void> {
    await qmpCommand(this.running(ref).qmpSocket, 'stop');
  }

  async resume(ref: SandboxRef): Promise<void> {
    await qmpCommand(this.running(ref).qmpSocket, 'cont');
  }

  // ---- helpers --------------------------------------------------------------------------------------

  private running(ref: SandboxRef): VmFiles {
    const files = this.host.files(ref);
    if (!this.host.liveRun(files)) {
      throw new SandboxDeskError('sandbox_not_running', `sandbox ${ref.name} is not running`, {
        hint: `start it with \`sandbox-desk sandbox start ${ref.name}\``,
      });
    }
    return files;
  }

  private meta(artifact: CheckpointArtifact): CheckpointMeta {
    const meta = readJson<CheckpointMeta>(join(artifact.ref, CK.meta));
    const broken = (what: string) =>
      new SandboxDeskError('not_found', `the checkpoint in ${artifact.ref} is broken: ${what} is gone`, {
        hint: 'remove it (checkpoint rm ID); it cannot be restored',
      });
    if (!meta) throw broken(CK.meta);
    if (!existsSync(join(artifact.ref, CK.disk))) throw broken(CK.disk);
    if (artifact.memory && !existsSync(join(artifact.ref, CK.memory))) throw broken(CK.memory);
    return meta;
  }

  /** Starts QEMU waiting for a saved state, loads the checkpoint's memory into it, lets it run, waits for SSH. */
  private async bootFromMemory(
    files: VmFiles,
    cfg: VmConfig,
    meta: CheckpointMeta,
    artifact: CheckpointArtifact,
    ctx: LifecycleContext,
  ): Promise<void> {
    const progress = ctx.progress ?? noProgress;
    const accel = meta.accel ?? 'tcg';
    const startedAt = Date.now();
    const deadline = startedAt + cfg.bootTimeoutS * 1000;
    ensureSocketDir(files);
    rmSync(files.qmpSocket, { force: true });
    let run: VmRun | null = null;
    for (let attempt = 0; ; attempt++) {
      ctx.signal?.throwIfAborted();
      const port = cfg.sshPort ?? (await freeLoopbackPort());
      if (existsSync(files.serialLog)) renameSync(files.serialLog, `${files.serialLog}.1`);
      writeFileSync(files.serialLog, '');
      rmSync(files.pidFile, { force: true });
      progress({
        step: 'process',
        message: `starting QEMU to load the saved state (${accel.toUpperCase()}, ${cfg.memoryMiB} MiB, SSH on 127.0.0.1:${port})`,
      });
      const launched = await launchQemu(
        qemuArgv(cfg, files, { accel, sshPort: port, incoming: true, netdevSuffix: netdevPolicySuffix(readVmNetwork(files.dir)) }),
      );
      if (!launched.ok) {
        if (isPortClash(launched.message) && cfg.sshPort === null && attempt < 2) continue;
        throw new SandboxDeskError('boot_failed', `QEMU did not start: ${launched.message || 'no message'}`, {
          hint: isPortClash(launched.message) ? `port ${port} on 127.0.0.1 is in use` : 'check the image and the checkpoint',
        });
      }
      const pid = Number(existsSync(files.pidFile) ? readFileSync(files.pidFile, 'utf8').trim() : NaN);
      const pidStart = Number.isInteger(pid) ? processStartTime(pid) : null;
      if (!pidStart) throw new SandboxDeskError('boot_failed', `QEMU exited right after starting: ${launched.message}`);
      run = { pid, pidStart, accel, sshPort: port, startedAt: new Date().toISOString() };
      writeJson(files.run, run); // a new pid: the incarnation changes, so the app drops the old shells
      break;
    }
    const alive = (): boolean => isVmProcess(run.pid, run.pidStart, files.qmpSocket);
    try {
      await loadVmState({ qmpSocket: files.qmpSocket, file: join(artifact.ref, CK.memory), progress, deadline, signal: ctx.signal, alive });
      await qmpCommand(files.qmpSocket, 'cont');
      progress({
        step: 'memory',
        message: `the saved state is loaded and running (after ${((Date.now() - startedAt) / 1000).toFixed(1)} s)`,
      });
      await this.waitForSsh(this.host.target(files, cfg, run.sshPort), files, run, deadline, ctx, startedAt);
    } catch (err) {
      await this.host.hardStop(files, run);
      throw err;
    }
  }

  /** SSH with the pinned key answers (the guest had it running already: no serial or cloud-init stages). */
  private async waitForSsh(
    target: SshTarget,
    files: VmFiles,
    run: VmRun,
    deadline: number,
    ctx: LifecycleContext,
    startedAt: number,
  ): Promise<void> {
    let last = '';
    for (;;) {
      ctx.signal?.throwIfAborted();
      if (!isVmProcess(run.pid, run.pidStart, files.qmpSocket)) {
        throw new SandboxDeskError(
          'boot_failed',
          `QEMU (pid ${run.pid}) exited after loading the saved state. Serial log tail:\n${serialTail(files.serialLog)}`,
        );
      }
      if (Date.now() > deadline)
        throw new SandboxDeskError('boot_failed', `SSH did not answer after the restore (last answer: ${last || 'none'})`);
      const r = await sshProbe(target, 'true', 15_000);
      if (r.code === 0) break;
      if (isHostKeyMismatch(r.stderr)) {
        throw new SandboxDeskError('boot_failed', `the restored VM's SSH host key is not the one pinned for it in ${target.knownHosts}`);
      }
      last = r.stderr.trim().split('\n').pop() ?? '';
      await sleep(500);
    }
    ctx.progress?.({
      step: 'ssh',
      message: `SSH answers on 127.0.0.1:${run.sshPort} (after ${((Date.now() - startedAt) / 1000).toFixed(1)} s)`,
    });
  }

  /** A fork answers with its own pinned key, hostname and MAC (retried: the MAC change takes a moment). */
  private async checkIdentity(target: SshTarget, hostname: string, mac: string, deadline: number): Promise<void> {
    let last = '';
    while (Date.now() < deadline) {
      const r = await sshProbe(target, IDENTITY_PROBE, 15_000);
      last = (r.stdout.trim() || r.stderr.trim()).split('\n').pop() ?? '';
      if (r.code === 0 && r.stdout.trim() === `${hostname} ${mac}`) return;
      await sleep(1000);
    }
    throw new SandboxDeskError(
      'boot_failed',
      `the fork did not take its own identity (wanted "${hostname} ${mac}", last answer: ${last || 'none'})`,
    );
  }

  /**
   * The guest's clock stood still while its memory was saved; it jumps forward now. Set from the host
   * (there is no hwclock in a minimal guest) and said, since timers in the guest see the jump.
   */
  private async fixClock(target: SshTarget, progress: (e: ProgressEvent) => void): Promise<void> {
    const before = await sshProbe(target, 'date -u +%s', 15_000);
    const guest = Number(before.stdout.trim());
    const now = Math.round(Date.now() / 1000);
    const set = await sshProbe(target, `sudo -n date -u -s @${now} >/dev/null`, 15_000);
    const behind = Number.isFinite(guest) ? now - guest : null;
    progress({
      step: 'clock',
      level: 'warning',
      message:
        set.code === 0
          ? `the guest clock was ${behind ?? '?'} s behind (it stood still while saved); set to the host's time`
          : `the guest clock is ${behind ?? '?'} s behind (it stood still while saved) and could not be set: ${set.stderr.trim()}`,
    });
  }
}

/** The key part (`ssh-ed25519 AAAA…`) of the first line of a known_hosts file. */
function sourceHostKey(knownHosts: string): string {
  const line = existsSync(knownHosts)
    ? readFileSync(knownHosts, 'utf8')
        .split('\n')
        .find((l) => l.trim())
    : undefined;
  const key = line?.split(' ').slice(1, 3).join(' ');
  if (!key)
    throw new SandboxDeskError('not_found', `the checkpoint has no pinned host key (${knownHosts})`, { hint: 'take a new checkpoint' });
  return key;
}

/** Our files in a checkpoint folder, then the folder itself when nothing else is in it. */
function removeCheckpointFiles(dir: string): void {
  for (const f of Object.values(CK)) rmSync(join(dir, f), { force: true });
  try {
    if (readdirSync(dir).length === 0) rmdirSync(dir);
  } catch {
    // already gone
  }
}
