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
import { shellQuote } from '../shell-quote.js';
import { writeSeedIso } from './cloud-init-seed.js';
import {
  forkIdentityScript,
  identityHelperArmScript,
  IDENTITY_PROBE,
  parseIdentityAnswer,
  randomMachineId,
  randomMac,
  vmHostname,
} from './fork-identity.js';
import { freeLoopbackPort } from './free-port.js';
import { qemuArgv } from './qemu-argv.js';
import { isPortClash, isVmProcess, launchQemu, processStartTime } from './qemu-process.js';
import { netdevPolicySuffix, readVmNetwork, writeVmNetwork } from './vm-network.js';
import { qmpCommand } from './qmp-client.js';
import { serialTail } from './serial-log.js';
import { ensureKeyPair } from './ssh-keys.js';
import { PhaseTimer } from './phase-timer.js';
import { closeMaster, isHostKeyMismatch, masterAlive, openMaster, sshExecPrefix, sshProbe, type SshTarget } from './ssh-transport.js';
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
  /**
   * The guest RAM is `ram.raw` (a copy of the VM's file-backed RAM) and memory.bin holds the devices'
   * state only: a copy maps the file copy-on-write instead of loading pages (templates; absent: no).
   */
  ramFile?: boolean;
  cfg: VmConfig;
  createdAt: string;
}

const CK = { meta: 'checkpoint.json', disk: 'disk.qcow2', memory: 'memory.bin', ram: 'ram.raw', knownHosts: 'known_hosts' } as const;

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
    // A VM whose RAM is a shared file (a template build's): the file is copied, the stream keeps the devices.
    const ramFile = spec.memory && cfg.ramFile === true;
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
          if (spec.memory)
            await saveVmState({ qmpSocket: files.qmpSocket, file: memory, progress, signal: ctx.signal, ignoreShared: ramFile });
          if (ramFile) {
            progress({
              step: 'memory',
              message: `copying the guest RAM file (${Math.round(usedBytes(join(files.dir, CK.ram)) / 2 ** 20)} MiB used)`,
            });
            // Still paused: the file is the RAM of the same instant as the disk and the device state.
            await copyFile(join(files.dir, CK.ram), join(spec.dir, CK.ram));
          }
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
        ...(ramFile ? { ramFile: true } : {}),
        cfg,
        createdAt: new Date().toISOString(),
      };
      writeJson(join(spec.dir, CK.meta), meta); // last: a folder without it is half-made, never listed as a checkpoint
      const sizeBytes = usedBytes(disk) + usedBytes(memory) + usedBytes(join(spec.dir, CK.ram));
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
   * the state into the VM in `files` (its disk, seed and vm.json in place) and the master SSH connection
   * is opened, pinned to the *source's* known host key (never trusted blindly). On one channel of it the
   * guest's clock is set and it is given the copy's own host key, hostname, MAC, machine-id and
   * cloud-init instance id, and reads them back (fork-identity.ts). Then known_hosts is re-pinned to the
   * new key: every later connection must present it (sshd reads its host key file for each connection),
   * and one presenting the source's key is refused. The master itself stays open unless the identity
   * channel cut it. The private host key file is removed afterwards (the seed keeps it for later
   * boots). On failure the VM is stopped; the caller removes or reuses its files.
   *
   * Each SSH connection costs a second or more in a TCG guest, so the restore makes one (the guest is
   * reached) and one channel, and the home the identity script measured is kept in run.json for
   * createEnvironment; `phases` (when given) times each step.
   */
  async startCopy(
    files: VmFiles,
    cfg: VmConfig,
    artifact: CheckpointArtifact,
    meta: CheckpointMeta,
    identity: { hostname: string; hostKey: { privateKey: string; publicKey: string }; instanceId: string; machineId: string },
    ctx: LifecycleContext,
    phases: PhaseTimer = new PhaseTimer(),
  ): Promise<void> {
    const progress = ctx.progress ?? noProgress;
    const { hostname, hostKey } = identity;
    // The loaded guest still holds the source's host key: first pin that one (known, never trusted blindly).
    const sourceKey = sourceHostKey(join(artifact.ref, CK.knownHosts));
    writeFileSync(files.knownHosts, `${cfg.hostKeyAlias} ${sourceKey}\n`, { mode: 0o600 });
    await this.bootFromMemory(files, cfg, meta, artifact, ctx, phases);
    const run = this.host.liveRun(files)!;
    const target = this.host.target(files, cfg, run.sshPort);
    const deadline = Date.now() + cfg.bootTimeoutS * 1000;
    try {
      progress({ step: 'identity', message: `giving the copy its own host key, hostname ${hostname}, MAC ${cfg.mac} and machine-id` });
      const exec = forkIdentityScript({
        hostname,
        mac: cfg.mac!,
        hostPublicKey: hostKey.publicKey,
        privateKey: hostKey.privateKey,
        machineId: identity.machineId,
        instanceId: identity.instanceId,
        clockEpoch: Math.round(Date.now() / 1000),
      });
      // Over the master bootFromMemory opened (a channel, not a connection of its own).
      const r = await runArgv([...sshExecPrefix(target, { interactive: false }), exec.command], { input: exec.input, timeoutMs: 90_000 });
      const answer = parseIdentityAnswer(r.stdout);
      if (r.code !== 0 && !answer.ok && r.code !== 255) {
        const why = r.stderr.trim() || r.stdout.trim().split('\n').slice(-3).join(' / ') || `exit ${r.code}`;
        throw new SandboxDeskError('boot_failed', `could not give the copy its own identity: ${why}`);
      }
      if (answer.via)
        progress({
          step: 'identity',
          message: answer.via === 'helper' ? "root's part ran by the template's waiting helper (no sudo)" : "root's part ran by sudo",
        });
      phases.mark('identity');
      reportClock(progress, answer.clockBefore, answer.ok);
      // From now on only the copy's new key is trusted: every new connection must present it, and one
      // presenting the source's key (shared by every copy of it) is refused.
      writeFileSync(files.knownHosts, `${cfg.hostKeyAlias} ${hostKey.publicKey.split(' ').slice(0, 2).join(' ')}\n`, { mode: 0o600 });
      rmSync(files.hostKey, { force: true });
      // The master stays: it reaches this guest through the loopback port QEMU forwards to it (nothing
      // else can answer there), and the script above ran as root on it. Reopening it only to see the new
      // key cost a whole SSH handshake (0.6 s under TCG). Only when the channel was cut (the MAC change
      // can do that) is it opened again, with the new key, which proves the guest serves it.
      if (!(await masterAlive(target))) {
        await this.connectMaster(target, files, run, deadline, ctx, 'the copy, with its new host key');
        phases.mark('ssh-new-key');
      }
      if (answer.identity !== `${hostname} ${cfg.mac!}`) {
        // The channel was cut before the answer (or the MAC had not taken yet): ask again until it holds.
        await this.checkIdentity(target, hostname, cfg.mac!, deadline);
        if (!answer.ok) await this.fixClock(target, progress);
        phases.mark('identity-recheck');
      }
      if (answer.home) writeJson(files.run, { ...run, home: { user: cfg.user, path: answer.home } } satisfies VmRun);
    } catch (err) {
      await this.host.hardStop(files, run);
      throw err;
    }
  }

  /**
   * Prepares a running VM that is about to become a template (fork-identity.ts:
   * identityHelperArmScript): its sshd forks connections without re-executing itself where that can
   * be done, and the identity helper waits, so each copy gets its identity without a sudo. Returns the
   * helper's pid in the guest and what was done to sshd; a failure is the caller's to weigh (copies
   * fall back to sudo without the helper). checkNewConnection must follow: sshd was restarted.
   */
  async armIdentityHelper(ref: SandboxRef): Promise<{ pid: number; sshd: 'no-reexec' | 'as-it-was' | 'unchanged' }> {
    const target = this.runningTarget(ref);
    const arm = `sudo -n sh -c ${shellQuote(identityHelperArmScript(target.loginUser))}`;
    const r = await runArgv([...sshExecPrefix(target, { interactive: false }), arm], { timeoutMs: 120_000 });
    const m = /^helper-armed (\d+)$/m.exec(r.stdout);
    if (r.code !== 0 || !m) {
      throw new SandboxDeskError(
        'boot_failed',
        `could not start the identity helper in ${ref.name}: ${r.stderr.trim() || `exit ${r.code}`}`,
      );
    }
    const sshd = /^sshd=(no-reexec|as-it-was)$/m.exec(r.stdout)?.[1] as 'no-reexec' | 'as-it-was' | undefined;
    return { pid: Number(m[1]), sshd: sshd ?? 'unchanged' };
  }

  /**
   * A new SSH connection (not the master) to the VM answers with its pinned key: what every copy of
   * a template needs, checked before the template's memory is saved (its sshd may have been restarted).
   */
  async checkNewConnection(ref: SandboxRef): Promise<void> {
    const target = this.runningTarget(ref);
    const r = await sshProbe(target, 'echo sdesk-ssh-ok', 60_000);
    if (r.code !== 0 || r.stdout.trim() !== 'sdesk-ssh-ok') {
      throw new SandboxDeskError(
        'boot_failed',
        `${ref.name}'s sshd does not answer a new connection: ${r.stderr.trim() || `exit ${r.code}`}`,
        {
          hint: 'the template was not saved; build it again (image template build)',
        },
      );
    }
  }

  /** The SSH target of a VM that runs (refused otherwise: running). */
  private runningTarget(ref: SandboxRef): SshTarget {
    const files = this.running(ref);
    return this.host.target(files, this.host.config(files), this.host.liveRun(files)!.sshPort);
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
    if (artifact.memory && meta.ramFile && !existsSync(join(artifact.ref, CK.ram))) throw broken(CK.ram);
    return meta;
  }

  /** Starts QEMU waiting for a saved state, loads the checkpoint's memory into it, lets it run, waits for SSH. */
  private async bootFromMemory(
    files: VmFiles,
    cfg: VmConfig,
    meta: CheckpointMeta,
    artifact: CheckpointArtifact,
    ctx: LifecycleContext,
    phases: PhaseTimer = new PhaseTimer(),
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
        qemuArgv(cfg, files, {
          accel,
          sshPort: port,
          incoming: true,
          netdevSuffix: netdevPolicySuffix(readVmNetwork(files.dir)),
          // Copy-on-write: the guest's writes stay in this QEMU's memory, the checkpoint's file never changes.
          ...(meta.ramFile ? { memoryFile: { path: join(artifact.ref, CK.ram), shared: false } } : {}),
        }),
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
    phases.mark('qemu-start');
    const alive = (): boolean => isVmProcess(run.pid, run.pidStart, files.qmpSocket);
    try {
      await loadVmState({
        qmpSocket: files.qmpSocket,
        file: join(artifact.ref, CK.memory),
        progress,
        deadline,
        signal: ctx.signal,
        alive,
        ignoreShared: meta.ramFile === true,
      });
      phases.mark('state-load');
      await qmpCommand(files.qmpSocket, 'cont');
      phases.mark('resume');
      progress({
        step: 'memory',
        message: `the saved state is loaded and running (after ${((Date.now() - startedAt) / 1000).toFixed(1)} s)`,
      });
      await this.connectMaster(this.host.target(files, cfg, run.sshPort), files, run, deadline, ctx, 'the restored VM');
      phases.mark('ssh-connect');
      ctx.progress?.({
        step: 'ssh',
        message: `SSH answers on 127.0.0.1:${run.sshPort} (after ${((Date.now() - startedAt) / 1000).toFixed(1)} s)`,
      });
    } catch (err) {
      await this.host.hardStop(files, run);
      throw err;
    }
  }

  /**
   * Opens the VM's master SSH connection with the pinned key, retrying until the guest answers (it had
   * sshd running already: no serial or cloud-init stages). This is the connection later commands share,
   * so reaching the guest costs one SSH handshake, not a probe and then a master.
   */
  private async connectMaster(
    target: SshTarget,
    files: VmFiles,
    run: VmRun,
    deadline: number,
    ctx: LifecycleContext,
    what: string,
  ): Promise<void> {
    const log = join(files.dir, 'ssh-master.log');
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
        throw new SandboxDeskError('boot_failed', `SSH to ${what} did not answer (last answer: ${last || 'none'})`);
      const r = await openMaster(target, log);
      if (r.ok) return;
      if (isHostKeyMismatch(r.log)) {
        throw new SandboxDeskError('boot_failed', `${what} does not serve the SSH host key pinned for it in ${target.knownHosts}`);
      }
      last = r.log.trim().split('\n').pop() ?? '';
      await sleep(200);
    }
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
   * (there is no hwclock in a minimal guest) on one channel of the master, and said, since timers in
   * the guest see the jump.
   */
  private async fixClock(target: SshTarget, progress: (e: ProgressEvent) => void): Promise<void> {
    const now = Math.round(Date.now() / 1000);
    const r = await runArgv([...sshExecPrefix(target, { interactive: false }), `date -u +%s; sudo -n date -u -s @${now} >/dev/null`], {
      timeoutMs: 30_000,
    });
    const before = Number(r.stdout.trim().split('\n')[0]);
    if (r.code === 0) reportClock(progress, Number.isFinite(before) ? before : null, true, now);
    else
      progress({
        step: 'clock',
        level: 'warning',
        message: `the guest clock stood still while saved and could not be set: ${r.stderr.trim() || `exit ${r.code}`}`,
      });
  }
}

/** Says how far behind the restored guest's clock was (timers in the guest see the jump). */
function reportClock(progress: (e: ProgressEvent) => void, before: number | null, set: boolean, now = Math.round(Date.now() / 1000)): void {
  const behind = before === null ? '?' : String(now - before);
  progress({
    step: 'clock',
    level: 'warning',
    message: set
      ? `the guest clock was ${behind} s behind (it stood still while saved); set to the host's time`
      : `the guest clock is ${behind} s behind (it stood still while saved) and could not be set`,
  });
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
