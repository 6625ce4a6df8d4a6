/**
 * The template paths of the qemu provider with QEMU itself faked away: provision against a small real
 * disk (qemu-img, ssh-keygen and the seed tools are real, nothing boots), and the first start of a VM
 * made for a template with the memory load replaced (the host's startCopy), so a damaged template, a
 * stale one and a load that fails are each seen in milliseconds.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runArgv } from '../run-argv.js';
import { QemuProvider } from './qemu-provider.js';
import { provisionedVm, writeFakeTemplate } from './test/fake-template.js';
import type { TemplateMeta, TemplateUse } from './vm-template-store.js';
import type { SandboxEnvironment } from '../provider.js';
import type { TemplateDesktopStarter } from './vm-template-desktop.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const OPTS = { memoryMiB: 512, cpus: 1, desktop: false };

/** A data dir, a tiny qcow2 "image" by path, and a template of it whose files hash as template.json says. */
async function setup(over: Partial<TemplateMeta> = {}, templateDesktop?: TemplateDesktopStarter) {
  const dataDir = mkdtempSync(join(tmpdir(), 'sdesk-tpl-'));
  dirs.push(dataDir);
  const image = join(dataDir, 'tiny.qcow2');
  expect((await runArgv(['qemu-img', 'create', '-q', '-f', 'qcow2', image, '64M'])).code).toBe(0);
  const provider = new QemuProvider({ dataDir }, templateDesktop ? { templateDesktop } : {});
  const { dir, meta } = await writeFakeTemplate(join(dataDir, 'qemu'), image, image, OPTS, {
    memoryBytes: 8192,
    knownHosts: 'sdesk-vm-.template-x ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBogus\n',
    meta: over,
  });
  const provision = async (name: string) => {
    const made = await provider.provision({
      name,
      image,
      user: null,
      mounts: [],
      env: {},
      options: { memory: '512', cpus: '1', accel: 'tcg' },
      labels: {},
      resourceName: name,
    });
    return provisionedVm(made.backendRef!);
  };
  return { provider, dir, meta, provision };
}

// qemu-img and ssh-keygen run for real: seconds on a loaded 2-core host.
describe('VM templates in the qemu provider (QEMU faked)', { timeout: 30_000 }, () => {
  it('a create that fits a template is provisioned for it: its own host key kept for the restore, the seed’s instance id noted', async () => {
    const { provision, meta, dir } = await setup();
    const vm = await provision('fits');
    expect(vm.use()).toMatchObject({ state: 'pending', ref: meta.ref, dir, imageHash: meta.imageHash });
    expect(existsSync(vm.files.hostKey)).toBe(true);
  });

  it('image changed since the template: the create goes cold saying so, and the template is rebuilt', async () => {
    const { provider, provision, meta } = await setup({ imageHash: 'an-older-image' });
    const rebuild = vi.spyOn(provider.templates, 'rebuildInBackground').mockImplementation(() => undefined);
    const vm = await provision('stale');
    expect(vm.use()).toMatchObject({
      state: 'cold',
      reason: expect.stringMatching(/changed since its template .* was made; it is rebuilt/),
    });
    expect(rebuild).toHaveBeenCalledWith(expect.objectContaining({ ref: meta.ref }));
    expect(existsSync(vm.files.hostKey)).toBe(false); // a cold VM's private key lives in its seed only
    expect(
      (await provider.status({ name: 'stale', backendRef: vm.files.dir, image: null, user: null, mounts: [], env: {}, options: {} }))
        .details,
    ).toMatchObject({ fromTemplate: false, templateNote: expect.stringMatching(/changed/) });
  });

  it('a corrupt memory file is detected before QEMU sees it: cold boot said, disk back to a fresh overlay, template removed and rebuilt', async () => {
    const { provider, provision, dir, meta } = await setup();
    const vm = await provision('corrupt');
    writeFileSync(join(dir, 'memory.bin'), Buffer.alloc(8192, 2)); // same size, other bytes
    const startCopy = vi.spyOn(provider.checkpoints, 'startCopy');
    const rebuild = vi.spyOn(provider.templates, 'rebuildInBackground').mockImplementation(() => undefined);
    const warnings: string[] = [];
    const pending = vm.use() as Extract<TemplateUse, { state: 'pending' }>;
    const ok = await provider.templates.startFromTemplate(vm.files, vm.cfg, pending, {
      progress: (e) => e.level === 'warning' && warnings.push(e.message),
    });
    expect(ok).toBe(false);
    expect(startCopy).not.toHaveBeenCalled();
    expect(vm.use()).toMatchObject({
      state: 'cold',
      reason: expect.stringMatching(/is damaged: its memory\.bin does not match the SHA-256 .*booting cold, and the template is rebuilt/),
    });
    expect(warnings.join('\n')).toMatch(/damaged/);
    expect(existsSync(dir)).toBe(false);
    expect(rebuild).toHaveBeenCalledWith(expect.objectContaining({ ref: meta.ref }));
    // A fresh overlay of the image (its backing file), the VM's own key pinned, its private key gone.
    const info = await runArgv(['qemu-img', 'info', '--output=json', vm.files.disk]);
    expect(JSON.parse(info.stdout)['backing-filename']).toBe(meta.image);
    expect(readFileSync(vm.files.knownHosts, 'utf8')).toMatch(new RegExp(`^${vm.cfg.hostKeyAlias.replace(/\./g, '\\.')} ssh-ed25519 `));
    expect(existsSync(vm.files.hostKey)).toBe(false);
  });

  it('QEMU refusing the saved state counts as damage too; an SSH failure afterwards does not remove the template', async () => {
    const { provider, provision, dir } = await setup();
    vi.spyOn(provider.templates, 'rebuildInBackground').mockImplementation(() => undefined);
    const a = await provision('load-fails');
    vi.spyOn(provider.checkpoints, 'startCopy').mockRejectedValueOnce(new Error('loading the saved memory failed: bad section'));
    expect(await provider.templates.startFromTemplate(a.files, a.cfg, a.use() as never, {})).toBe(false);
    expect(a.use()).toMatchObject({ state: 'cold', reason: expect.stringMatching(/bad section.*rebuilt in the background/) });
    expect(existsSync(dir)).toBe(false);

    const again = await setup();
    const b = await again.provision('ssh-fails');
    vi.spyOn(again.provider.checkpoints, 'startCopy').mockRejectedValueOnce(new Error('SSH did not answer after the restore'));
    expect(await again.provider.templates.startFromTemplate(b.files, b.cfg, b.use() as never, {})).toBe(false);
    expect(b.use()).toMatchObject({
      state: 'cold',
      reason: expect.stringMatching(/could not restore template .*SSH did not answer.*booting cold$/),
    });
    expect(existsSync(again.dir)).toBe(true);
  });

  it('a restore that works records it: fromTemplate in the details, with the time it took', async () => {
    const { provider, provision, meta } = await setup();
    const vm = await provision('works');
    const startCopy = vi.spyOn(provider.checkpoints, 'startCopy').mockResolvedValueOnce(undefined);
    const pending = vm.use() as Extract<TemplateUse, { state: 'pending' }>;
    expect(await provider.templates.startFromTemplate(vm.files, vm.cfg, pending, {})).toBe(true);
    const identity = startCopy.mock.calls[0]![4];
    // The guest gets the instance id its own seed carries.
    expect(identity).toMatchObject({ hostname: 'sdesk-works', instanceId: pending.instanceId });
    expect(readFileSync(vm.files.seed).includes(Buffer.from(pending.instanceId))).toBe(true);
    expect(identity.machineId).toMatch(/^[0-9a-f]{32}$/);
    expect(vm.use()).toMatchObject({ state: 'used', ref: meta.ref });
    // The template's disk was copied into the VM: nothing keeps depending on the template's files.
    expect(readFileSync(vm.files.disk)).toEqual(readFileSync(join(dirs.at(-1)!, 'tiny.qcow2')));
  });

  it('a build starts the identity helper in the VM before its memory is saved; without one it warns and builds on (copies use sudo)', async () => {
    for (const armed of [true, false]) {
      const { provider } = await setup();
      const image = join(dirs.at(-1)!, 'tiny.qcow2');
      vi.spyOn(provider, 'start').mockResolvedValue(undefined);
      const arm = vi.spyOn(provider.checkpoints, 'armIdentityHelper');
      if (armed) arm.mockResolvedValue({ pid: 321, sshd: 'no-reexec' });
      else arm.mockRejectedValue(new Error('could not start the identity helper in x: sudo: a password is required'));
      const probe = vi.spyOn(provider.checkpoints, 'checkNewConnection').mockResolvedValue(undefined);
      const save = vi.spyOn(provider.checkpoints, 'checkpoint').mockImplementation((ref, spec) => {
        mkdirSync(spec.dir, { recursive: true });
        writeFileSync(join(spec.dir, 'disk.qcow2'), 'disk');
        writeFileSync(join(spec.dir, 'memory.bin'), 'state');
        return Promise.resolve({ ref: spec.dir, memory: true, sizeBytes: 9 });
      });
      const events: { level?: string; message: string }[] = [];
      const meta = await provider.templates.build({ image, memoryMiB: 512, cpus: 1 }, { progress: (e) => events.push(e) });
      expect(meta.files).toHaveProperty('memory.bin');
      expect(arm).toHaveBeenCalledOnce();
      expect(arm.mock.invocationCallOrder[0]!).toBeLessThan(probe.mock.invocationCallOrder[0]!);
      expect(probe.mock.invocationCallOrder[0]!).toBeLessThan(save.mock.invocationCallOrder[0]!);
      const warning = events.find((e) => e.level === 'warning');
      if (armed) expect(warning).toBeUndefined();
      else
        expect(warning?.message).toMatch(/copies of this template will use sudo for their identity: could not start the identity helper/);
    }
  });

  it('a build whose VM no longer answers a new SSH connection (sshd restarted) saves no template', async () => {
    const { provider } = await setup();
    provider.templates.remove(provider.templates.list()[0]!.meta.ref);
    vi.spyOn(provider, 'start').mockResolvedValue(undefined);
    vi.spyOn(provider.checkpoints, 'armIdentityHelper').mockResolvedValue({ pid: 321, sshd: 'no-reexec' });
    vi.spyOn(provider.checkpoints, 'checkNewConnection').mockRejectedValue(new Error("x's sshd does not answer a new connection"));
    const save = vi.spyOn(provider.checkpoints, 'checkpoint');
    await expect(provider.templates.build({ image: join(dirs.at(-1)!, 'tiny.qcow2'), memoryMiB: 512, cpus: 1 })).rejects.toThrow(
      /does not answer a new connection/,
    );
    expect(save).not.toHaveBeenCalled();
    expect(provider.templates.list()).toEqual([]);
  });

  it('a --desktop build saves the running desktop with the template; a copy restored from it has it to hand over', async () => {
    const desktop = {
      sandbox: 'x',
      user: 'sdesk-display',
      mode: 'isolated' as const,
      display: 20,
      geometry: '1280x800',
      frame: '1280x800',
    };
    const startDesktop = vi.fn<TemplateDesktopStarter>((e, name) => Promise.resolve({ ...desktop, sandbox: name }));
    const { provider } = await setup({}, startDesktop);
    provider.templates.remove(provider.templates.list()[0]!.meta.ref);
    const image = join(dirs.at(-1)!, 'tiny.qcow2');
    vi.spyOn(provider, 'start').mockResolvedValue(undefined);
    const env = { fake: 'env' } as unknown as SandboxEnvironment;
    vi.spyOn(provider, 'createEnvironment').mockResolvedValue(env);
    vi.spyOn(provider.checkpoints, 'armIdentityHelper').mockResolvedValue({ pid: 321, sshd: 'no-reexec' });
    vi.spyOn(provider.checkpoints, 'checkNewConnection').mockResolvedValue(undefined);
    const save = vi.spyOn(provider.checkpoints, 'checkpoint').mockImplementation((ref, spec) => {
      mkdirSync(spec.dir, { recursive: true });
      writeFileSync(join(spec.dir, 'disk.qcow2'), readFileSync(image));
      writeFileSync(join(spec.dir, 'memory.bin'), 'state');
      writeFileSync(join(spec.dir, 'checkpoint.json'), '{}');
      return Promise.resolve({ ref: spec.dir, memory: true, sizeBytes: 9 });
    });
    const meta = await provider.templates.build({ image, memoryMiB: 512, cpus: 1, desktop: true });
    expect(startDesktop).toHaveBeenCalledWith(env, expect.stringMatching(/^\.template-/), '1280x800', expect.any(Function));
    expect(startDesktop.mock.invocationCallOrder[0]!).toBeLessThan(save.mock.invocationCallOrder[0]!);
    expect(meta.desktop).toMatchObject({ user: 'sdesk-display', mode: 'isolated', sandbox: expect.stringMatching(/^\.template-/) });
    expect(meta.ref).toMatch(/-desktop$/);

    // A create of that shape: restored, and the desktop is there to take up until the create has.
    const made = await provider.provision({
      name: 'withdesk',
      image,
      user: null,
      mounts: [],
      env: {},
      options: { memory: '512', cpus: '1', accel: 'tcg', desktop: 'true' },
      labels: {},
      resourceName: 'withdesk',
    });
    const vm = provisionedVm(made.backendRef!);
    vi.spyOn(provider.checkpoints, 'startCopy').mockResolvedValueOnce(undefined);
    expect(await provider.templates.startFromTemplate(vm.files, vm.cfg, vm.use() as Extract<TemplateUse, { state: 'pending' }>, {})).toBe(
      true,
    );
    const ref = { name: 'withdesk', backendRef: made.backendRef, image: null, user: null, mounts: [], env: {}, options: {} };
    expect(provider.restoredDesktop(ref)).toEqual(meta.desktop);
    expect((await provider.status(ref)).details).toMatchObject({
      fromTemplate: true,
      desktopFromTemplate: false,
      desktopNote: 'not handed over yet',
    });
    provider.noteDesktopTaken(ref, { ok: true, cookie: 'abc' });
    expect(provider.restoredDesktop(ref)).toBeNull();
    expect((await provider.status(ref)).details).toMatchObject({ fromTemplate: true, desktopFromTemplate: true });
  });

  it('a --desktop build whose desktop is not up saves no template, and says why', async () => {
    const { provider } = await setup(
      {},
      vi.fn<TemplateDesktopStarter>().mockRejectedValue(new Error("the template's desktop is not up: not running after 180 s: xfwm4")),
    );
    provider.templates.remove(provider.templates.list()[0]!.meta.ref);
    vi.spyOn(provider, 'start').mockResolvedValue(undefined);
    vi.spyOn(provider, 'createEnvironment').mockResolvedValue({} as SandboxEnvironment);
    const save = vi.spyOn(provider.checkpoints, 'checkpoint');
    const remove = vi.spyOn(provider, 'remove');
    await expect(
      provider.templates.build({ image: join(dirs.at(-1)!, 'tiny.qcow2'), memoryMiB: 512, cpus: 1, desktop: true }),
    ).rejects.toThrow(/not up: not running after 180 s: xfwm4/);
    expect(save).not.toHaveBeenCalled();
    expect(remove).toHaveBeenCalledOnce(); // the build VM goes
    expect(provider.templates.list()).toEqual([]);
  });

  it('a template is removable; one being built is not', async () => {
    const { provider, meta, dir } = await setup();
    mkdirSync(`${dir}.building`);
    writeFileSync(join(`${dir}.building`, 'pid'), String(process.pid));
    expect(() => provider.templates.remove(meta.ref)).toThrow(/being rebuilt right now/);
    rmSync(`${dir}.building`, { recursive: true });
    provider.templates.remove(meta.ref);
    expect(provider.templates.list()).toEqual([]);
    expect(() => provider.templates.remove(meta.ref)).toThrow(/no VM template/);
  });
});
