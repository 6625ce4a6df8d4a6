/**
 * VM templates: build one (boot a VM once, wait until it is ready, save its memory), and start a new
 * VM from one (a copy of its disk, its memory loaded, a fresh identity) — or, when that cannot be done,
 * say why and let the VM boot cold. What a template is on disk and when one fits: vm-template-store.ts.
 *
 * The trigger is explicit: `sandbox-desk image template build IMAGE [--memory --cpus --desktop]`.
 * After that, every `sandbox create --backend qemu` of that image and those options is restored from
 * it (unless `--option template=off`), and a template that turns out stale (its image changed) or
 * damaged (a checksum or QEMU's load fails) is removed and rebuilt in the background.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxDeskError } from '../../shared/errors.js';
import type { CheckpointArtifact, LifecycleContext, ProvisionResult, ProvisionSpec, SandboxEnvironment, SandboxRef } from '../provider.js';
import { randomMachineId, vmHostname } from './fork-identity.js';
import { PhaseTimer } from './phase-timer.js';
import type { TemplateDesktop, TemplateDesktopStarter } from './vm-template-desktop.js';
import { copyFile, type CheckpointMeta, type QemuCheckpoints } from './vm-checkpoints.js';
import { readJson, vmFiles, writeJson, type VmConfig, type VmFiles } from './vm-files.js';
import {
  imageHash,
  isBuilding,
  listTemplates,
  lockTemplate,
  markVerified,
  sha256File,
  TEMPLATE_FILES,
  TEMPLATE_META,
  TEMPLATE_USE,
  templateRef,
  templatesRoot,
  templateSlug,
  verifyTemplateFiles,
  type TemplateEntry,
  type TemplateMeta,
  type TemplateOptions,
  type TemplateUse,
} from './vm-template-store.js';

/** What the provider lends: its own create, boot and removal of a VM, and its checkpoints. */
export interface TemplateHost {
  root: string;
  provision(spec: ProvisionSpec, ctx?: LifecycleContext): Promise<ProvisionResult>;
  start(ref: SandboxRef, ctx?: LifecycleContext): Promise<void>;
  remove(ref: SandboxRef): Promise<void>;
  checkpoints: QemuCheckpoints;
  /** Makes `disk` a fresh copy-on-write overlay of the VM's base image (a cold VM's disk). */
  freshOverlay(cfg: VmConfig, disk: string): Promise<void>;
  /** The running VM's environment (app-owned commands in the guest): the desktop's start and checks. */
  environment(ref: SandboxRef): Promise<SandboxEnvironment>;
  /** True when the VM's image has the desktop's parts built in (debian-desktop). */
  imageHasDesktop(cfg: VmConfig): Promise<boolean>;
  /** Starts and checks a --desktop build's desktop (the app gives it: src/desktop/template-desktop.ts). */
  startDesktop?: TemplateDesktopStarter;
}

export interface TemplateBuildRequest {
  image: string;
  memoryMiB?: number;
  cpus?: number;
  /** The desktop installed (an image without it) and, either way, running and ready in the saved memory. */
  desktop?: boolean;
  /** The desktop's screen size in the template (default 1280x800: the app's default). */
  geometry?: string;
}

const noProgress = (): void => undefined;
const DEFAULT_GEOMETRY = '1280x800';
const BUILD_BOOT_TIMEOUT_S = 1800;

export class VmTemplates {
  /** Background rebuilds running in this process, by template ref (never two of one). */
  private readonly rebuilding = new Map<string, Promise<void>>();
  /** The last background rebuild's failure per ref: `image list` callers can say it. */
  readonly rebuildErrors = new Map<string, string>();

  constructor(private readonly host: TemplateHost) {}

  list(): (TemplateEntry & { building: boolean })[] {
    return listTemplates(this.host.root).map((t) => ({ ...t, building: isBuilding(t.dir) }));
  }

  find(ref: string): TemplateEntry | null {
    return listTemplates(this.host.root).find((t) => t.meta.ref === ref) ?? null;
  }

  /**
   * Boots a VM of the image once (cold, TCG or whatever the host gives), waits until it is ready (the
   * desktop's install too with `desktop`), saves its memory, and makes that the template for the
   * image and options — replacing an older one only once the new one is complete.
   */
  async build(req: TemplateBuildRequest, ctx: LifecycleContext = {}): Promise<TemplateMeta> {
    const progress = ctx.progress ?? noProgress;
    const startedAt = Date.now();
    const name = `.template-${randomBytes(4).toString('hex')}`; // no sandbox name starts with a dot
    // A build runs in the background and may share a loaded host: a long boot budget (a create's own
    // restore keeps its usual one).
    const options: Record<string, string> = { bootTimeout: String(BUILD_BOOT_TIMEOUT_S) };
    if (req.memoryMiB !== undefined) options.memory = String(req.memoryMiB);
    if (req.cpus !== undefined) options.cpus = String(req.cpus);
    if (req.desktop) options.desktop = 'true';
    const spec: ProvisionSpec = { name, image: req.image, user: null, mounts: [], env: {}, options, labels: {}, resourceName: name };
    progress({ step: 'template', message: `booting ${req.image} once to make a template of it` });
    const made = await this.host.provision({ ...spec, options: { ...options, template: 'off' } }, ctx);
    const ref: SandboxRef = { name, backendRef: made.backendRef, image: made.image, user: made.user, mounts: [], env: {}, options };
    const files = vmFiles(made.backendRef!);
    const cfg = readJson<VmConfig>(files.config)!;
    const image = cfg.base.name ?? cfg.base.disk;
    const opts: TemplateOptions = { memoryMiB: cfg.memoryMiB, cpus: cfg.cpus, desktop: cfg.desktop === true };
    const tref = templateRef(image, opts);
    const dir = join(templatesRoot(this.host.root), templateSlug(image, opts));
    let release: (() => void) | null = null;
    try {
      release = lockTemplate(dir, tref);
      const hash = await imageHash(this.host.root, cfg.base);
      // Its RAM in a file: saved by copying it, and each VM made from the template maps that copy
      // copy-on-write instead of loading its pages through a migration stream (seconds under TCG).
      writeJson(files.config, { ...cfg, ramFile: true } satisfies VmConfig);
      await this.host.start(ref, ctx);
      const run = readJson<{ accel: 'kvm' | 'tcg' }>(files.run);
      // --desktop: the bot desktop running and checked in the saved memory, so a copy's first frame
      // needs no desktop start (vm-template-desktop.ts). Before the identity helper: the desktop's start
      // is the slow part, and the helper's connection is checked last.
      let desktop: TemplateDesktop | null = null;
      if (req.desktop && (cfg.desktop === true || (await this.host.imageHasDesktop(cfg)))) {
        if (!this.host.startDesktop)
          throw new SandboxDeskError('unsupported', 'this Sandbox Desk cannot start a desktop in a VM template (no desktop service)');
        desktop = await this.host.startDesktop(await this.host.environment(ref), name, req.geometry ?? DEFAULT_GEOMETRY, (message) =>
          progress({ step: 'template', message }),
        );
      }
      const next = `${dir}.new`;
      rmSync(next, { recursive: true, force: true });
      // A root helper waits in the saved memory, so a copy's identity needs no sudo (0.3-0.6 s under
      // TCG), and sshd forks connections without re-executing itself. Without the helper, copies use
      // sudo: slower, not wrong, so a failure there is said, not fatal. A new connection must answer
      // either way (sshd may have been restarted): else no template is saved.
      try {
        const armed = await this.host.checkpoints.armIdentityHelper(ref);
        progress({ step: 'template', message: `identity helper waiting (pid ${armed.pid} in the guest); sshd ${armed.sshd}` });
      } catch (err) {
        progress({
          step: 'template',
          level: 'warning',
          message: `copies of this template will use sudo for their identity: ${err instanceof Error ? err.message : String(err)}`,
        });
      }
      await this.host.checkpoints.checkNewConnection(ref);
      progress({ step: 'template', message: `saving the ready VM's memory as template ${tref}` });
      await this.host.checkpoints.checkpoint(ref, { id: 'template', memory: true, dir: next, labels: {} }, ctx);
      const sums = {} as TemplateMeta['files'];
      const saved = TEMPLATE_FILES.filter((f) => existsSync(join(next, f)));
      for (const f of saved) {
        const path = join(next, f);
        sums[f] = { sha256: await sha256File(path), size: statSync(path).size };
      }
      markVerified(next, saved);
      const meta: TemplateMeta = {
        version: 1,
        ref: tref,
        image,
        imageHash: hash,
        options: opts,
        user: cfg.user,
        appKey: readFileSync(join(this.host.root, 'id_ed25519.pub'), 'utf8').trim(),
        cpuType: cfg.cpuType,
        accel: run?.accel ?? 'tcg',
        files: sums,
        ...(desktop ? { desktop } : {}),
        createdAt: new Date().toISOString(),
        buildSeconds: Math.round((Date.now() - startedAt) / 100) / 10,
      };
      writeJson(join(next, TEMPLATE_META), meta); // last: a folder without it is half-made, never used
      rmSync(dir, { recursive: true, force: true });
      renameSync(next, dir);
      progress({ step: 'done', message: `template ${tref} is ready (built in ${meta.buildSeconds} s)` });
      return meta;
    } finally {
      await this.host.remove(ref).catch(() => undefined);
      release?.();
    }
  }

  /** Removes a template; refused only while it is being built (nothing else depends on its files). */
  remove(ref: string): void {
    const t = this.find(ref);
    if (!t) throw new SandboxDeskError('image_not_found', `no VM template ${ref}`, { hint: 'see `sandbox-desk image list`' });
    if (isBuilding(t.dir))
      throw new SandboxDeskError('refused', `template ${ref} is being rebuilt right now`, { hint: 'remove it once the build ends' });
    rmSync(t.dir, { recursive: true, force: true });
  }

  /** Rebuilds a stale or damaged template without holding up the create that found it; failures are kept. */
  rebuildInBackground(meta: TemplateMeta): void {
    if (this.rebuilding.has(meta.ref)) return;
    const job = this.build({
      image: meta.image,
      memoryMiB: meta.options.memoryMiB,
      cpus: meta.options.cpus,
      // A desktop running in it (debian-desktop has the desktop's parts without the option): rebuilt with one.
      desktop: meta.options.desktop || meta.desktop !== undefined,
      ...(meta.desktop ? { geometry: meta.desktop.geometry } : {}),
    })
      .then(
        () => void this.rebuildErrors.delete(meta.ref),
        (err: unknown) => void this.rebuildErrors.set(meta.ref, err instanceof Error ? err.message : String(err)),
      )
      .finally(() => this.rebuilding.delete(meta.ref));
    this.rebuilding.set(meta.ref, job);
  }

  /** Settles when the background rebuilds started so far have ended (tests, and a clean shutdown). */
  async settled(): Promise<void> {
    while (this.rebuilding.size > 0) await Promise.all([...this.rebuilding.values()]);
  }

  /**
   * The first start of a VM provisioned for a template: check the template's files, copy its disk,
   * load its memory and give the guest this VM's identity. True when it runs; false when it could not
   * (the reason is in template-use.json and said as a warning): its disk is then a fresh overlay of
   * the image again and the caller boots it cold. A damaged template is removed and rebuilt.
   */
  async startFromTemplate(
    files: VmFiles,
    cfg: VmConfig,
    use: Extract<TemplateUse, { state: 'pending' }>,
    ctx: LifecycleContext,
  ): Promise<boolean> {
    const progress = ctx.progress ?? noProgress;
    const startedAt = Date.now();
    const phases = new PhaseTimer();
    const meta = readJson<TemplateMeta>(join(use.dir, TEMPLATE_META));
    let damaged = false;
    try {
      if (!meta || meta.imageHash !== use.imageHash)
        throw new TemplateGone(`template ${use.ref} was removed or rebuilt since this sandbox was created`);
      progress({ step: 'template', message: `checking template ${use.ref}` });
      const problem = await verifyTemplateFiles(use.dir, meta);
      if (problem) {
        damaged = true;
        throw new TemplateGone(`template ${use.ref} is damaged: ${problem}`);
      }
      phases.mark('verify');
      ctx.signal?.throwIfAborted();
      progress({ step: 'disk', message: `copying template ${use.ref}'s disk` });
      await copyFile(join(use.dir, 'disk.qcow2'), `${files.disk}.template`);
      renameSync(`${files.disk}.template`, files.disk);
      phases.mark('disk-copy');
      const ckMeta = readJson<CheckpointMeta>(join(use.dir, 'checkpoint.json'));
      if (!ckMeta) throw new TemplateGone(`template ${use.ref} has no checkpoint.json`);
      const artifact: CheckpointArtifact = { ref: use.dir, memory: true, sizeBytes: 0 };
      const hostKey = { privateKey: readFileSync(files.hostKey, 'utf8'), publicKey: readFileSync(`${files.hostKey}.pub`, 'utf8') };
      try {
        await this.host.checkpoints.startCopy(
          files,
          cfg,
          artifact,
          ckMeta,
          { hostname: vmHostname(nameOf(cfg)), hostKey, instanceId: use.instanceId, machineId: randomMachineId() },
          ctx,
          phases,
        );
      } catch (err) {
        // QEMU refusing the saved state (or dying on it) is the template's fault; SSH or identity trouble is not.
        if (/loading the saved memory|exited while loading|exited after loading/.test(String((err as Error).message))) damaged = true;
        throw err;
      }
      const restoreSeconds = Math.round((Date.now() - startedAt) / 100) / 10;
      writeJson(join(files.dir, TEMPLATE_USE), {
        state: 'used',
        ref: use.ref,
        restoreSeconds,
        phases: phases.totals(),
        ...(meta.desktop ? { desktop: meta.desktop } : {}),
      } satisfies TemplateUse);
      progress({ step: 'template', message: `restored from template ${use.ref} in ${restoreSeconds} s (${phases.summary()})` });
      return true;
    } catch (err) {
      if (ctx.signal?.aborted) throw err;
      const why = err instanceof Error ? err.message.split('\n')[0] : String(err);
      const reason = damaged
        ? `${why}; booting cold, and the template is rebuilt in the background`
        : `could not restore template ${use.ref} (${why}); booting cold`;
      progress({ step: 'template', level: 'warning', message: reason });
      // Back to what a cold create makes: a fresh overlay, the VM's own host key pinned.
      await this.host.freshOverlay(cfg, files.disk);
      pinOwnKey(files, cfg);
      rmSync(files.hostKey, { force: true });
      writeJson(join(files.dir, TEMPLATE_USE), { state: 'cold', reason } satisfies TemplateUse);
      if (damaged && meta && existsSync(use.dir) && !isBuilding(use.dir)) {
        rmSync(use.dir, { recursive: true, force: true });
        this.rebuildInBackground(meta);
      }
      return false;
    }
  }
}

class TemplateGone extends Error {}

/** The sandbox name a VM's host key alias was made from (`sdesk-vm-NAME`). */
function nameOf(cfg: VmConfig): string {
  return cfg.hostKeyAlias.replace(/^sdesk-vm-/, '');
}

/** Only the VM's own host key is trusted for it, as provision pins it. */
function pinOwnKey(files: VmFiles, cfg: VmConfig): void {
  const pub = readFileSync(`${files.hostKey}.pub`, 'utf8');
  writeFileSync(files.knownHosts, `${cfg.hostKeyAlias} ${pub.split(' ').slice(0, 2).join(' ')}\n`, { mode: 0o600 });
}
