/**
 * The QEMU backend's lifecycle glue: provision (overlay + seed), start (accel decision, launch,
 * readiness, KVM → TCG fallback, adoption of a running VM), stop (ACPI, then hard), status, connect.
 *
 * Longer than ~400 lines on purpose: every concern already lives in a module of its own beside it
 * (argv, options, image, seed, accel, readiness, ssh, QMP, process identity, virtiofs); what is left
 * here is the order in which they are called, which reads best in one place, step after step.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { SandboxDeskError } from '../../shared/errors.js';
import { measureHome } from '../measure-home.js';
import type {
  ProviderWatchListener,
  BackendStatus,
  CreateEnvironmentOptions,
  ExecPrefixOptions,
  LifecycleContext,
  Mount,
  NetworkCapability,
  ProviderContext,
  ProvisionResult,
  ProvisionSpec,
  SandboxEnvironment,
  SandboxProvider,
  SandboxRef,
} from '../provider.js';
import { runArgv } from '../run-argv.js';
import { decideAccel, kvmDeviceUsable, readKvmVerdict, writeKvmVerdict } from './accel.js';
import { writeSeedIso } from './cloud-init-seed.js';
import { freeLoopbackPort } from './free-port.js';
import { requireHostTools } from './host-tools.js';
import { qemuArgv } from './qemu-argv.js';
import { guestProxyEnv, netdevPolicySuffix, readVmNetwork, writeVmNetwork } from './vm-network.js';
import { isPortClash, isVmProcess, kill, launchQemu, processStartTime, waitForExit } from './qemu-process.js';
import { qmpCommand } from './qmp-client.js';
import { QemuExitWatch } from './qemu-exit-watch.js';
import type { IDisposable } from '../../shared/lifecycle.js';
import { serialTail } from './serial-log.js';
import type { LogCapability, ResourceCapability } from '../observability.js';
import { vmLogs, vmResources } from './qemu-observability.js';
import { ensureKeyPair } from './ssh-keys.js';
import { closeMaster, ensureMaster, sshExecPrefix, type SshTarget } from './ssh-transport.js';
import { ensureSocketDir, readJson, vmFiles, writeJson, type VmConfig, type VmFiles, type VmRun } from './vm-files.js';
import { checkBaseUnchanged, DEFAULT_VM_IMAGE, diskFingerprint, resolveBaseImage } from './vm-image.js';
import { parseVmOptions } from './vm-options.js';
import { checkDesktopNetwork, DESKTOP_INSTALL_SCRIPT_PATH, desktopInstallScript } from './vm-desktop-install.js';
import { waitUntilReady } from './vm-readiness.js';
import { QemuCheckpoints } from './vm-checkpoints.js';
import { PAUSED_STATES, vmRunState } from './vm-migration.js';
import { randomMac } from './fork-identity.js';
import { VmTemplates } from './vm-template.js';
import type { TemplateDesktop, TemplateDesktopStarter } from './vm-template-desktop.js';
import { decideTemplate, imageHash, listTemplates, TEMPLATE_USE, type TemplateUse } from './vm-template-store.js';
import { checkMounts, guestMounts, sharesFor, startShares, stopShares } from './virtiofs.js';

/** One boot of one VM: a restarted QEMU has another pid or start time. */
const incarnationOf = (run: VmRun): string => `${run.pid}@${run.pidStart}`;

const USER_RE = /^[a-z_][a-z0-9_-]{0,31}$/;
const DEFAULT_USER = 'agent';

class QemuEnvironment implements SandboxEnvironment {
  cwd: string | null = null;
  readonly joinsArgv = true;

  constructor(
    private readonly target: SshTarget,
    /** Shared host folders: host paths under them translate to their place in the guest. */
    readonly mounts: readonly Mount[],
    readonly user: string,
    readonly home: string,
    readonly defaultCwd: string,
    readonly incarnation: string,
    /** The network policy's proxy settings, as `env` words before the remote command (vm-network.ts). */
    private readonly envWords: string[] = [],
  ) {}

  execPrefix(opts: ExecPrefixOptions): string[] {
    const prefix = sshExecPrefix(this.target, { user: opts.user ?? this.user, interactive: opts.interactive });
    return this.envWords.length ? [...prefix, 'env', ...this.envWords] : prefix;
  }

  getTempDir(): string {
    return '/tmp';
  }
}

/**
 * Sandboxes as QEMU virtual machines (Lima's shape): one directory per VM with a copy-on-write overlay
 * of a base image, a cloud-init NoCloud seed, the serial log and a QMP socket; commands and streams go
 * over SSH on a forwarded loopback port, multiplexed through one master connection.
 */
export class QemuProvider implements SandboxProvider {
  readonly name = 'qemu';
  readonly isContainer = true;
  readonly isolation = 'virtual-machine' as const;
  readonly defaultCwd = '~';
  readonly supportsStreams = true;
  readonly description = 'a QEMU virtual machine (default image debian-test), reached over SSH';
  private readonly root: string;
  /** The serial console and virtiofsd logs (src/sandbox/qemu/qemu-observability.ts). */
  readonly logs: LogCapability<SandboxRef> = vmLogs((ref) => this.files(ref));
  /** The QEMU process's CPU time and resident memory. */
  readonly resources: ResourceCapability<SandboxRef> = vmResources((ref) => {
    const files = this.files(ref);
    const run = this.liveRun(files);
    const cfg = readJson<VmConfig>(files.config);
    return run ? { pid: run.pid, memoryBytes: cfg ? cfg.memoryMiB * 2 ** 20 : null } : null;
  });

  private readonly exits = new QemuExitWatch();
  /** Checkpoints with memory, restore, fork, pause (vm-checkpoints.ts); it borrows the VM plumbing below. */
  readonly checkpoints: QemuCheckpoints;
  /** VM templates: memory states a create is restored from instead of booting (vm-template.ts). */
  readonly templates: VmTemplates;

  constructor(
    private readonly ctx: ProviderContext,
    /** templateDesktop: starts and checks the desktop of a `--desktop` template build (the app's desktop code). */
    opts: { templateDesktop?: TemplateDesktopStarter } = {},
  ) {
    this.root = join(ctx.dataDir, 'qemu');
    this.checkpoints = new QemuCheckpoints({
      root: this.root,
      files: (ref) => this.files(ref),
      config: (files) => this.config(files),
      target: (files, cfg, port) => this.target(files, cfg, port),
      liveRun: (files) => this.liveRun(files),
      hardStop: (files, run) => this.hardStop(files, run),
      start: (ref, ctx) => this.start(ref, ctx),
    });
    this.templates = new VmTemplates({
      root: this.root,
      provision: (spec, ctx) => this.provision(spec, ctx),
      start: (ref, ctx) => this.start(ref, ctx),
      remove: (ref) => this.remove(ref, { force: true }),
      checkpoints: this.checkpoints,
      freshOverlay: (cfg, disk) => makeOverlay({ ...cfg.base, format: cfg.base.format }, disk, cfg.diskGiB),
      environment: (ref) => this.createEnvironment({ cwd: '~', sandbox: ref }),
      ...(opts.templateDesktop ? { startDesktop: opts.templateDesktop } : {}),
      imageHasDesktop: async (cfg) =>
        cfg.base.name ? (await resolveBaseImage(cfg.base.name, this.ctx.dataDir).catch(() => null))?.desktop === true : false,
    });
  }

  private get verdictPath(): string {
    return join(this.root, 'kvm-verdict.json');
  }

  private files(ref: SandboxRef): VmFiles {
    return vmFiles(ref.backendRef ?? join(this.root, 'vms', ref.name));
  }

  private config(files: VmFiles): VmConfig {
    const cfg = readJson<VmConfig>(files.config);
    if (!cfg)
      throw new SandboxDeskError('sandbox_missing', `the VM's files are gone (${files.config})`, {
        hint: 'remove the sandbox and create it again',
      });
    return cfg;
  }

  private target(files: VmFiles, cfg: VmConfig, port: number): SshTarget {
    return {
      port,
      loginUser: cfg.user,
      key: join(this.root, 'id_ed25519'),
      knownHosts: files.knownHosts,
      hostKeyAlias: cfg.hostKeyAlias,
      controlPath: files.sshControl,
    };
  }

  /** The current boot when its QEMU is alive (and really is this VM's), else null. */
  private liveRun(files: VmFiles): VmRun | null {
    const run = readJson<VmRun>(files.run);
    return run && isVmProcess(run.pid, run.pidStart, files.qmpSocket) ? run : null;
  }

  // ---- create -----------------------------------------------------------------------------------

  async provision(spec: ProvisionSpec, ctx: LifecycleContext = {}): Promise<ProvisionResult> {
    requireHostTools();
    const { template: templateChoice, ...opts } = parseVmOptions(spec.options);
    const user = spec.user ?? DEFAULT_USER;
    if (!USER_RE.test(user))
      throw new SandboxDeskError('invalid_input', `VM user ${JSON.stringify(user)} is not a valid Linux user name`, {
        hint: 'use lowercase letters, digits, _ and -, e.g. agent',
      });
    checkMounts(spec.mounts);
    const progress = ctx.progress ?? (() => undefined);
    const base = await resolveBaseImage(spec.image ?? DEFAULT_VM_IMAGE, this.ctx.dataDir);
    if (opts.desktop && base.desktop) {
      // debian-desktop has the desktop built in: nothing to install, no mirror needed.
      progress({ step: 'desktop', message: `${base.name ?? base.disk} has the desktop's parts already; --desktop installs nothing` });
      opts.desktop = false;
    }
    // The image's advice (debian-desktop: 2 GiB for Xfce + Chromium), or 2 GiB for a --desktop install,
    // unless --memory says otherwise.
    if (spec.options.memory === undefined) opts.memoryMiB = base.memoryMiB ?? (opts.desktop ? 2048 : opts.memoryMiB);
    if (opts.diskGiB !== null && opts.diskGiB * 2 ** 30 < base.virtualSize) {
      throw new SandboxDeskError(
        'invalid_input',
        `--disk ${opts.diskGiB} GiB is smaller than the image (${(base.virtualSize / 2 ** 30).toFixed(1)} GiB)`,
        { hint: 'omit --disk to keep the image size, or give a larger one' },
      );
    }
    const dir = join(this.root, 'vms', spec.name);
    const files = vmFiles(dir);
    if (existsSync(dir)) {
      // Left by a create that crashed half-way: nothing runs from it and no sandbox owns it (the name was free).
      if (this.liveRun(files))
        throw new SandboxDeskError('name_taken', `a VM is still running from ${dir}`, { hint: 'stop its QEMU process, then try again' });
      rmSync(dir, { recursive: true, force: true });
    }
    // A cancel (ctx.signal) is honoured between the steps; the catch below removes the half-made directory.
    ctx.signal?.throwIfAborted();
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    try {
      progress({ step: 'disk', message: `creating a copy-on-write overlay of ${base.disk}` });
      await makeOverlay(base, files.disk, opts.diskGiB);
      // A template that fits is restored at the first start instead of a boot; if none fits, the create says why.
      const image = base.name ?? base.disk;
      const templates = templateChoice === 'off' ? [] : listTemplates(this.root);
      const decision = decideTemplate(templates, {
        image,
        // Hashing an image takes a moment the first time: only when a template of it exists.
        imageHash: templates.some((t) => t.meta.image === image) ? await imageHash(this.root, base) : '',
        opts: { ...opts, template: templateChoice },
        off: templateChoice === 'off',
        user,
        mountCount: spec.mounts.length,
        appKey: (await ensureKeyPair(join(this.root, 'id_ed25519'), 'sandbox-desk')).publicKey,
      });
      if (decision.use === null && decision.stale) this.templates.rebuildInBackground(decision.stale.meta);
      const instanceId = `sdesk-${randomBytes(8).toString('hex')}`;
      ctx.signal?.throwIfAborted();
      progress({ step: 'seed', message: 'writing the cloud-init seed (user, SSH keys)' });
      const appKey = await ensureKeyPair(join(this.root, 'id_ed25519'), 'sandbox-desk');
      const hostKey = await ensureKeyPair(files.hostKey, `sdesk-vm-${spec.name}`);
      const hostKeyAlias = `sdesk-vm-${spec.name}`;
      // Pinned before the first boot: the guest is given this host key, so no connection ever trusts blindly.
      writeFileSync(files.knownHosts, `${hostKeyAlias} ${hostKey.publicKey.split(' ').slice(0, 2).join(' ')}\n`, { mode: 0o600 });
      await writeSeedIso(files.seed, {
        instanceId,
        hostname: `sdesk-${spec.name}`
          .toLowerCase()
          .replace(/[^a-z0-9-]/g, '-')
          .slice(0, 63),
        user,
        authorizedKey: appKey.publicKey,
        hostKey: { privateKey: hostKey.privateKey, publicKey: hostKey.publicKey },
        mounts: guestMounts(sharesFor(files, spec.mounts)),
        ...(opts.desktop ? { desktopInstall: { path: DESKTOP_INSTALL_SCRIPT_PATH, script: desktopInstallScript() } } : {}),
      });
      // The private host key lives on in the seed only; the host needs just the public half (a VM made
      // from a template keeps it until its first start has given it to the restored guest).
      if (decision.use === null) rmSync(files.hostKey, { force: true });
      const use: TemplateUse =
        decision.use === null
          ? { state: 'cold', reason: decision.reason }
          : { state: 'pending', ref: decision.use.meta.ref, dir: decision.use.dir, imageHash: decision.use.meta.imageHash, instanceId };
      if (use.state === 'cold' && templateChoice !== 'off') progress({ step: 'template', message: `booting cold: ${use.reason}` });
      writeJson(join(dir, TEMPLATE_USE), use);
      ctx.signal?.throwIfAborted();

      const cfg: VmConfig = {
        version: 1,
        ...opts,
        base: {
          name: base.name,
          disk: base.disk,
          format: base.format,
          kernel: base.kernel,
          initrd: base.initrd,
          cmdline: base.cmdline,
          fingerprint: diskFingerprint(base.disk) ?? undefined,
        },
        user,
        hostKeyAlias,
        mac: randomMac(),
      };
      writeJson(files.config, cfg);
      return { backendRef: dir, user, image: base.name ?? base.disk };
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  // ---- start ------------------------------------------------------------------------------------

  async start(ref: SandboxRef, ctx: LifecycleContext = {}): Promise<void> {
    const files = this.files(ref);
    const cfg = this.config(files);
    const progress = ctx.progress ?? (() => undefined);
    const startedAt = Date.now();
    const deadline = startedAt + cfg.bootTimeoutS * 1000;

    // --desktop whose packages are not in yet (the first boot installs them): the wait for it, and its file.
    const desktopMarker = join(files.dir, 'desktop.json');
    const desktopPending = cfg.desktop === true && !existsSync(desktopMarker);
    const desktopWait = {
      desktopDeadline: desktopPending ? startedAt + (cfg.desktopTimeoutS ?? 3600) * 1000 : null,
      onDesktopInstalled: (browser: string | null) => writeJson(desktopMarker, { installedAt: new Date().toISOString(), browser }),
    };

    const running = this.liveRun(files);
    if (running) {
      // Another app process (or an earlier run of this one) booted it: adopt it, never boot a second copy.
      progress({ step: 'process', message: `already running (pid ${running.pid}); adopting it` });
      await waitUntilReady({
        files,
        target: this.target(files, cfg, running.sshPort),
        run: running,
        deadline,
        startedAt,
        progress,
        signal: ctx.signal,
        silentLimitMs: null,
        timeoutS: cfg.bootTimeoutS,
        ...desktopWait,
      });
      return;
    }

    requireHostTools();
    checkBaseUnchanged(cfg.base);
    const use = readJson<TemplateUse>(join(files.dir, TEMPLATE_USE));
    if (use?.state === 'pending') {
      await closeMaster(this.target(files, cfg, 0));
      if (await this.templates.startFromTemplate(files, cfg, use, ctx)) return;
    }
    // Up front, before a boot: an install from the mirror cannot work without a route to it.
    if (desktopPending) checkDesktopNetwork(readVmNetwork(files.dir).mode, ref.name);
    ensureSocketDir(files);
    rmSync(files.qmpSocket, { force: true });
    await closeMaster(this.target(files, cfg, 0));
    const decision = decideAccel(cfg.accel, kvmDeviceUsable(), readKvmVerdict(this.verdictPath), this.verdictPath);
    if (decision.warning) progress({ step: 'accel', level: 'warning', message: decision.warning });
    let accel = decision.accel;
    let probation = decision.probation;
    let portAttempts = 0;
    const shares = sharesFor(files, ref.mounts);

    for (;;) {
      ctx.signal?.throwIfAborted();
      const port = cfg.sshPort ?? (await freeLoopbackPort());
      // Each boot gets a fresh serial log; the previous one is kept for post-mortems.
      if (existsSync(files.serialLog)) renameSync(files.serialLog, `${files.serialLog}.1`);
      writeFileSync(files.serialLog, '');
      rmSync(files.pidFile, { force: true });
      progress({
        step: 'process',
        message: `starting QEMU (${accel.toUpperCase()}, ${cfg.cpus} CPU, ${cfg.memoryMiB} MiB, SSH on 127.0.0.1:${port})`,
      });
      // virtiofsd serves one QEMU connection: fresh ones for every attempt.
      const sharePids = await startShares(shares);
      const netdevSuffix = netdevPolicySuffix(readVmNetwork(files.dir));
      // A template build's VM keeps its RAM in a file (vm-files.ts ramFile), saved by copying it.
      const memoryFile = cfg.ramFile ? { path: join(files.dir, 'ram.raw'), shared: true } : undefined;
      const launched = await launchQemu(qemuArgv(cfg, files, { accel, sshPort: port, netdevSuffix, memoryFile }, shares));
      if (!launched.ok) {
        stopShares(sharePids);
        if (isPortClash(launched.message)) {
          if (cfg.sshPort === null && ++portAttempts < 3) continue; // another process took the free port we picked
          throw new SandboxDeskError(
            'port_in_use',
            `QEMU could not forward SSH: port ${port} on 127.0.0.1 is already in use (${launched.message})`,
            {
              hint:
                cfg.sshPort !== null
                  ? `free port ${port}, or recreate the sandbox without --option sshPort to use any free port`
                  : 'try again',
              details: { serialTail: serialTail(files.serialLog) },
            },
          );
        }
        if (/Failed to get ".*" lock/.test(launched.message)) {
          // QEMU locks its disks: another process started this VM a moment ago and has not written run.json yet.
          throw new SandboxDeskError('refused', `the VM is being started by another process (its disk is locked: ${launched.message})`, {
            hint: 'wait a moment and start it again: a running VM is adopted, never booted twice',
          });
        }
        if (accel === 'kvm' && probation) {
          progress({
            step: 'accel',
            level: 'warning',
            message: `QEMU could not use KVM (${launched.message}); running under TCG, which is slower`,
          });
          writeKvmVerdict(this.verdictPath, false, `QEMU refused KVM: ${launched.message}`);
          accel = 'tcg';
          probation = false;
          continue;
        }
        throw new SandboxDeskError('boot_failed', `QEMU did not start: ${launched.message || 'no message'}`, {
          hint: accel === 'kvm' ? 'try --accel tcg' : 'check the image (qemu-img info) and the options',
          details: { serialTail: serialTail(files.serialLog) },
        });
      }
      const pid = Number(existsSync(files.pidFile) ? readFileSync(files.pidFile, 'utf8').trim() : NaN);
      const pidStart = Number.isInteger(pid) ? processStartTime(pid) : null;
      if (!pidStart) {
        stopShares(sharePids);
        throw new SandboxDeskError('boot_failed', `QEMU exited right after starting. Serial log tail:\n${serialTail(files.serialLog)}`);
      }
      const run: VmRun = { pid, pidStart, accel, sshPort: port, startedAt: new Date().toISOString() };
      writeJson(files.run, run);
      this.exits.add({ sandbox: ref.name, backendRef: ref.backendRef, pid, pidStart });

      const target = this.target(files, cfg, port);
      let outcome;
      try {
        outcome = await waitUntilReady({
          files,
          target,
          run,
          deadline,
          startedAt,
          progress,
          signal: ctx.signal,
          silentLimitMs: accel === 'kvm' && probation ? cfg.kvmProbeS * 1000 : null,
          timeoutS: cfg.bootTimeoutS,
          ...desktopWait,
        });
      } catch (err) {
        // A VM that cannot become ready is not left spinning: stop it, keep its serial log.
        await this.hardStop(files, run);
        stopShares(sharePids);
        throw err;
      }
      if (outcome === 'kvm_silent') {
        await this.hardStop(files, run);
        stopShares(sharePids);
        writeKvmVerdict(this.verdictPath, false, `no serial output within ${cfg.kvmProbeS} s under KVM`);
        progress({
          step: 'accel',
          level: 'warning',
          message: `KVM does not work on this host: /dev/kvm opens, but the guest printed nothing in ${cfg.kvmProbeS} s. Restarting under TCG, which is slower (remembered in ${this.verdictPath}).`,
        });
        accel = 'tcg';
        probation = false;
        continue;
      }
      if (accel === 'kvm' && probation) writeKvmVerdict(this.verdictPath, true, 'a KVM guest booted');
      return;
    }
  }

  // ---- stop / remove ------------------------------------------------------------------------------

  async stop(ref: SandboxRef, ctx: LifecycleContext = {}): Promise<void> {
    const files = this.files(ref);
    const cfg = readJson<VmConfig>(files.config);
    const progress = ctx.progress ?? (() => undefined);
    const run = this.liveRun(files);
    if (run && cfg) {
      progress({ step: 'shutdown', message: 'asking the guest to power off (ACPI)' });
      const asked = await qmpCommand(files.qmpSocket, 'system_powerdown').then(
        () => true,
        () => false,
      );
      const off = asked && (await waitForExit(run.pid, run.pidStart, cfg.stopTimeoutS * 1000));
      if (off) progress({ step: 'shutdown', message: 'the guest powered off' });
      else {
        progress({
          step: 'shutdown',
          level: 'warning',
          message: `the guest did not power off within ${cfg.stopTimeoutS} s; stopping QEMU hard`,
        });
        await this.hardStop(files, run);
      }
      await closeMaster(this.target(files, cfg, run.sshPort));
    }
    rmSync(files.run, { force: true });
    rmSync(files.qmpSocket, { force: true });
  }

  /** QMP `quit`, then SIGKILL: for a guest that ignores ACPI or a boot that failed. */
  private async hardStop(files: VmFiles, run: VmRun): Promise<void> {
    await qmpCommand(files.qmpSocket, 'quit', undefined, 2_000).catch(() => undefined);
    if (!(await waitForExit(run.pid, run.pidStart, 3_000))) {
      kill(run.pid, 'SIGKILL');
      await waitForExit(run.pid, run.pidStart, 5_000);
    }
    rmSync(files.run, { force: true });
  }

  async remove(ref: SandboxRef, _opts: { force: boolean }): Promise<void> {
    const files = this.files(ref);
    const run = this.liveRun(files);
    const cfg = readJson<VmConfig>(files.config);
    if (run) await this.hardStop(files, run);
    if (cfg) await closeMaster(this.target(files, cfg, 0));
    rmSync(files.dir, { recursive: true, force: true });
    if (dirname(files.qmpSocket) !== files.dir) rmSync(dirname(files.qmpSocket), { recursive: true, force: true });
  }

  // ---- state --------------------------------------------------------------------------------------

  /** QEMU's exit for the VMs this provider started (see QemuExitWatch); the labels are not needed. */
  watch(_labels: Record<string, string>, listener: ProviderWatchListener): IDisposable {
    return this.exits.watch(listener);
  }

  /**
   * The desktop a VM restored from a desktop template has running (its folder still named after the
   * template's build VM), until the create has taken it up (`desktopTaken`); null for any other VM.
   */
  restoredDesktop(ref: SandboxRef): TemplateDesktop | null {
    const use = readJson<TemplateUse>(join(this.files(ref).dir, TEMPLATE_USE));
    return use?.state === 'used' && use.desktop && !use.desktopTaken ? use.desktop : null;
  }

  /** How the create's hand-over of a restored desktop went: `inspect` says it (desktopFromTemplate). */
  noteDesktopTaken(ref: SandboxRef, taken: { ok: true; cookie: string } | { ok: false; reason: string }): void {
    const path = join(this.files(ref).dir, TEMPLATE_USE);
    const use = readJson<TemplateUse>(path);
    if (use?.state === 'used') writeJson(path, { ...use, desktopTaken: taken } satisfies TemplateUse);
  }

  async status(ref: SandboxRef): Promise<BackendStatus> {
    const files = this.files(ref);
    const cfg = readJson<VmConfig>(files.config);
    if (!ref.backendRef || !cfg) return { state: 'missing', incarnation: null, detail: `the VM directory ${files.dir} is gone` };
    const run = readJson<VmRun>(files.run);
    const use = readJson<TemplateUse>(join(files.dir, TEMPLATE_USE));
    const details = (r: VmRun | null, alive: boolean) => ({
      ...(use ? templateDetails(use) : {}),
      accel: r?.accel ?? cfg.accel,
      sshPort: alive ? (r?.sshPort ?? null) : null,
      pid: alive ? (r?.pid ?? null) : null,
      serialLog: files.serialLog,
    });
    if (run && isVmProcess(run.pid, run.pidStart, files.qmpSocket)) {
      // Paused by pause() (QMP stop), or for a moment while a checkpoint saves: commands wait until it runs.
      const vmState = await vmRunState(files.qmpSocket).catch(() => 'running');
      const state = PAUSED_STATES.has(vmState) ? 'paused' : 'running';
      return { state, incarnation: incarnationOf(run), details: { ...details(run, true), vmState, memoryMiB: cfg.memoryMiB } };
    }
    if (run) {
      // run.json outlived its process: QEMU died without a stop from us (killed, crashed, or the guest powered off).
      return {
        state: 'stopped',
        incarnation: null,
        detail: `QEMU (pid ${run.pid}) exited without being stopped by Sandbox Desk; serial log tail:\n${serialTail(files.serialLog, 8)}`,
        details: details(run, false),
      };
    }
    return { state: 'stopped', incarnation: null, details: details(null, false) };
  }

  // ---- connect ------------------------------------------------------------------------------------

  async createEnvironment(opts: CreateEnvironmentOptions): Promise<SandboxEnvironment> {
    const files = this.files(opts.sandbox);
    const cfg = this.config(files); // sandbox_missing when the VM's files are gone
    const run = this.liveRun(files);
    if (!run) {
      throw new SandboxDeskError('sandbox_not_running', `sandbox ${opts.sandbox.name} is not running`, {
        hint: `start it with \`sandbox-desk sandbox start ${opts.sandbox.name}\``,
      });
    }
    const target = this.target(files, cfg, run.sshPort);
    // The master connection makes every later command cheap; if it cannot start, commands connect on their own.
    await ensureMaster(target);
    const incarnation = incarnationOf(run);
    const user = opts.sandbox.user ?? cfg.user;
    // Measured once per boot: the caller's cache, or what a restore's identity script measured for this user.
    const home =
      opts.cachedHome && opts.cachedHome.incarnation === incarnation
        ? opts.cachedHome.home
        : run.home?.user === user
          ? run.home.path
          : await measureHome(sshExecPrefix(target, { user, interactive: false }), true);
    const defaultCwd = opts.cwd === '~' ? home : opts.cwd;
    return new QemuEnvironment(target, opts.sandbox.mounts, user, home, defaultCwd, incarnation, guestProxyEnv(readVmNetwork(files.dir)));
  }

  /** Network policy: slirp's restrict=on, and a guestfwd to the egress proxy (vm-network.ts). */
  readonly networkPolicy: NetworkCapability = {
    modes: ['open', 'offline', 'allow'],
    liveModeSwitch: false,
    apply: async (ref, plan) => {
      const dir = this.files(ref).dir;
      const running = this.liveRun(this.files(ref));
      const now = readVmNetwork(dir);
      if (running && now.mode !== plan.policy.mode)
        throw new SandboxDeskError('unsupported', `a running VM's network mode cannot change (it is part of its QEMU command line)`, {
          hint: `stop ${ref.name}, change the mode, start it again; the allow list changes while it runs`,
        });
      writeVmNetwork(dir, { mode: plan.policy.mode, socket: plan.policy.mode === 'allow' ? join(plan.socketDir, 'proxy.sock') : null });
    },
    release: async () => undefined,
  };
}

/** A copy-on-write overlay of the base image: a cold VM's disk (the image's size unless --disk says more). */
async function makeOverlay(base: { disk: string; format: string }, disk: string, diskGiB: number | null): Promise<void> {
  rmSync(disk, { force: true });
  const made = await runArgv([
    'qemu-img',
    'create',
    '-q',
    '-f',
    'qcow2',
    '-b',
    base.disk,
    '-F',
    base.format,
    disk,
    ...(diskGiB ? [`${diskGiB}G`] : []),
  ]);
  if (made.code !== 0)
    throw new SandboxDeskError('image_invalid', `qemu-img could not make an overlay of ${base.disk}: ${made.stderr.trim()}`);
}

/** What `inspect` and `create --json` say about templates: made from one, or why not. */
function templateDetails(use: TemplateUse): Record<string, string | number | boolean | null> {
  if (use.state === 'used') {
    // Where the restore's time went (phase-timer.ts), e.g. `verify 0.0 s, qemu-start 0.6 s, …`.
    const phases = use.phases ? Object.entries(use.phases).map(([p, ms]) => `${p} ${(ms / 1000).toFixed(1)} s`) : [];
    return {
      fromTemplate: true,
      template: use.ref,
      templateRestoreSeconds: use.restoreSeconds,
      ...(phases.length ? { templateRestorePhases: phases.join(', ') } : {}),
      // A desktop template: its desktop ran in the saved memory and was handed over at the create (or why not).
      ...(use.desktop
        ? use.desktopTaken?.ok
          ? { desktopFromTemplate: true }
          : { desktopFromTemplate: false, desktopNote: use.desktopTaken?.reason ?? 'not handed over yet' }
        : {}),
    };
  }
  if (use.state === 'pending')
    return { fromTemplate: false, template: use.ref, templateNote: 'restored from the template at its first start' };
  return { fromTemplate: false, template: null, templateNote: use.reason };
}
