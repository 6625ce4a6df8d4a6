import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseVmOptions } from './vm-options.js';
import {
  decideTemplate,
  imageHash,
  isBuilding,
  listTemplates,
  markVerified,
  lockTemplate,
  sha256File,
  templateRef,
  templatesRoot,
  templateSlug,
  verifyTemplateFiles,
  type TemplateEntry,
  type TemplateMeta,
} from './vm-template-store.js';

const dirs: string[] = [];
const tmp = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'sdesk-tpl-unit-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const opts = { memoryMiB: 512, cpus: 1, desktop: false };
const meta = (over: Partial<TemplateMeta> = {}): TemplateMeta => ({
  version: 1,
  ref: templateRef('debian-test', opts),
  image: 'debian-test',
  imageHash: 'h1',
  options: opts,
  user: 'agent',
  cpuType: null,
  accel: 'tcg',
  files: { 'disk.qcow2': { sha256: '', size: 0 }, 'memory.bin': { sha256: '', size: 0 } },
  createdAt: '2026-12-05T00:00:00Z',
  buildSeconds: 1,
  ...over,
});
const entry = (m = meta()): TemplateEntry => ({ meta: m, dir: '/x', sizeBytes: 0 });
const request = (options: Record<string, string>, over: Partial<Parameters<typeof decideTemplate>[1]> = {}) => ({
  image: 'debian-test',
  imageHash: 'h1',
  opts: parseVmOptions({ memory: '512', cpus: '1', ...options }),
  off: false,
  user: 'agent',
  mountCount: 0,
  appKey: 'ssh-ed25519 AAAAkey1 sandbox-desk',
  ...over,
});

describe('which template a create can use', () => {
  it('the template of the same image (by content) and options is used', () => {
    const d = decideTemplate([entry()], request({ accel: 'tcg' }));
    expect(d.use?.meta.ref).toBe('debian-test@512m-1cpu');
  });

  it('options it cannot serve are refused with the reason: memory, mounts, disk size, CPU model, user, kvm', () => {
    const reason = (r: ReturnType<typeof request>): string => {
      const d = decideTemplate([entry()], r);
      expect(d.use).toBeNull();
      return d.use === null ? d.reason : '';
    };
    expect(reason(request({ memory: '2048' }))).toMatch(
      /templates of debian-test serve 512 MiB, 1 CPU, not 2048 MiB, 1 CPU \(make one: sandbox-desk image template build debian-test --memory 2048 --cpus 1\)/,
    );
    expect(reason(request({}, { mountCount: 1 }))).toMatch(/shares host folders \(--mount\)/);
    expect(reason(request({ disk: '20' }))).toMatch(/--disk 20 GiB/);
    expect(reason(request({ cpuType: 'qemu64' }))).toMatch(/CPU model the default, not qemu64/);
    expect(reason(request({}, { user: 'root' }))).toMatch(/user is agent, not root/);
    expect(reason(request({ accel: 'kvm' }))).toMatch(/--accel kvm .* saved under TCG/);
    expect(reason(request({}, { off: true }))).toMatch(/template=off/);
    const other = decideTemplate([entry(meta({ appKey: 'ssh-ed25519 AAAAkey2 x' }))], request({}));
    expect(other.use === null && other.reason).toMatch(/authorises another app key \(it was made in another data dir\)/);
    expect(decideTemplate([entry(meta({ appKey: 'ssh-ed25519 AAAAkey1 other-comment' }))], request({})).use).not.toBeNull();
    expect(reason(request({}, { image: 'debian-desktop' }))).toMatch(
      /no template of debian-desktop \(make one: sandbox-desk image template build/,
    );
  });

  it('a template whose image changed is not used, and is handed back to be rebuilt', () => {
    const d = decideTemplate([entry()], request({}, { imageHash: 'h2' }));
    expect(d.use).toBeNull();
    if (d.use !== null) return;
    expect(d.reason).toMatch(/image debian-test changed since its template debian-test@512m-1cpu was made; it is rebuilt/);
    expect(d.stale?.meta.ref).toBe('debian-test@512m-1cpu');
  });

  it('slugs are folder names; a disk path gets a hash of the path so two disks named alike never share one', () => {
    expect(templateSlug('debian-test', opts)).toBe('debian-test--512m-1cpu');
    const a = templateSlug('/a/disk.qcow2', opts);
    const b = templateSlug('/b/disk.qcow2', opts);
    expect(a).toMatch(/^disk\.qcow2-[0-9a-f]{8}--512m-1cpu$/);
    expect(a).not.toBe(b);
    expect(templateSlug('../../etc\nx', { ...opts, desktop: true })).toMatch(/^etc-x-[0-9a-f]{8}--512m-1cpu-desktop$/);
  });
});

describe('template files', () => {
  const withFiles = async (): Promise<{ dir: string; m: TemplateMeta }> => {
    const dir = join(tmp(), 'tpl');
    mkdirSync(dir);
    writeFileSync(join(dir, 'disk.qcow2'), 'disk bytes');
    writeFileSync(join(dir, 'memory.bin'), Buffer.alloc(4096, 7));
    const m = meta({
      files: {
        'disk.qcow2': { sha256: await sha256File(join(dir, 'disk.qcow2')), size: 10 },
        'memory.bin': { sha256: await sha256File(join(dir, 'memory.bin')), size: 4096 },
      },
    });
    writeFileSync(join(dir, 'template.json'), JSON.stringify(m));
    return { dir, m };
  };

  it('a corrupt memory file is detected even when its size and mtime are put back', async () => {
    const { dir, m } = await withFiles();
    expect(await verifyTemplateFiles(dir, m)).toBeNull();
    const bad = Buffer.alloc(4096, 7);
    bad[100] = 8;
    writeFileSync(join(dir, 'memory.bin'), bad);
    utimesSync(join(dir, 'memory.bin'), new Date(0), new Date(0));
    expect(await verifyTemplateFiles(dir, m)).toMatch(/memory\.bin does not match the SHA-256 it was saved with/);
  });

  it('a truncated or missing file is named', async () => {
    const { dir, m } = await withFiles();
    writeFileSync(join(dir, 'memory.bin'), 'short');
    expect(await verifyTemplateFiles(dir, m)).toMatch(/memory\.bin is 5 bytes, not the 4096/);
    rmSync(join(dir, 'disk.qcow2'));
    expect(await verifyTemplateFiles(dir, m)).toMatch(/disk\.qcow2 is gone/);
  });

  it('a RAM file (ram.raw) is checked like the others; one marked verified by its build is not hashed again until written', async () => {
    const { dir, m } = await withFiles();
    writeFileSync(join(dir, 'ram.raw'), Buffer.alloc(8192, 3));
    const withRam: TemplateMeta = {
      ...m,
      files: { ...m.files, 'ram.raw': { sha256: await sha256File(join(dir, 'ram.raw')), size: 8192 } },
    };
    markVerified(dir, ['disk.qcow2', 'memory.bin', 'ram.raw']);
    expect(await verifyTemplateFiles(dir, withRam)).toBeNull();
    const bad = Buffer.alloc(8192, 3);
    bad[5000] = 4;
    writeFileSync(join(dir, 'ram.raw'), bad); // a write changes its stat: hashed again, and caught
    expect(await verifyTemplateFiles(dir, withRam)).toMatch(/ram\.raw does not match the SHA-256/);
    rmSync(join(dir, 'ram.raw'));
    expect(await verifyTemplateFiles(dir, withRam)).toMatch(/ram\.raw is gone/);
    // A template from before RAM files has none to check.
    expect(await verifyTemplateFiles(dir, m)).toBeNull();
  });

  it('only complete templates are listed (a build that died leaves no template.json)', async () => {
    const root = tmp();
    const { dir } = await withFiles();
    mkdirSync(templatesRoot(root), { recursive: true });
    const { renameSync } = await import('node:fs');
    renameSync(dir, join(templatesRoot(root), 'debian-test--512m-1cpu'));
    mkdirSync(join(templatesRoot(root), 'half-made--512m-1cpu'));
    expect(listTemplates(root).map((t) => t.meta.ref)).toEqual(['debian-test@512m-1cpu']);
  });

  it("the image's content hash changes when the image's bytes do, and is remembered otherwise", async () => {
    const root = tmp();
    const disk = join(root, 'disk.img');
    writeFileSync(disk, 'one');
    const h1 = await imageHash(root, { disk, kernel: null, initrd: null });
    expect(await imageHash(root, { disk, kernel: null, initrd: null })).toBe(h1);
    writeFileSync(disk, 'two');
    utimesSync(disk, new Date(0), new Date(0));
    expect(await imageHash(root, { disk, kernel: null, initrd: null })).not.toBe(h1);
  });

  it('one build at a time: a second is refused naming the builder; a dead builder’s lock is taken over', () => {
    const dir = join(tmp(), 'templates', 'debian-test--512m-1cpu');
    const release = lockTemplate(dir, 'debian-test@512m-1cpu');
    expect(isBuilding(dir)).toBe(true);
    expect(() => lockTemplate(dir, 'debian-test@512m-1cpu')).toThrow(/being built \(by process \d+\)/);
    release();
    expect(isBuilding(dir)).toBe(false);
    mkdirSync(`${dir}.building`);
    writeFileSync(join(`${dir}.building`, 'pid'), '999999999');
    lockTemplate(dir, 'debian-test@512m-1cpu')();
  });
});
