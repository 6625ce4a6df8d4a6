import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ImageInfo } from '../shared/image-types.js';
import type { SandboxRecord } from '../store/sandbox-store.js';
import { buildPaths, findImage, ImageService, validateTag } from './image-service.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sdesk-imgsvc-'));
  process.env.SANDBOX_DESK_VM_IMAGES = join(dir, 'machine');
});
afterEach(() => {
  delete process.env.SANDBOX_DESK_VM_IMAGES;
  rmSync(dir, { recursive: true, force: true });
});

const img = (over: Partial<ImageInfo> & { ref: string }): ImageInfo => ({
  kind: 'docker',
  id: 'sha256:0123456789abcdef',
  tags: [over.ref],
  sizeBytes: 1,
  createdAt: null,
  usedBy: [],
  desktop: null,
  origin: 'app',
  path: null,
  derivedFrom: null,
  ...over,
});

describe('image service', () => {
  it('finds an image by ref, by a tag without :latest, or by an id prefix', () => {
    const list = [img({ ref: 'a/b:latest' }), img({ ref: 'c:1', id: 'sha256:feedfacecafe0000' })];
    expect(findImage(list, 'a/b')?.ref).toBe('a/b:latest');
    expect(findImage(list, 'feedfacecafe')?.ref).toBe('c:1');
    expect(findImage(list, 'zzz')).toBeUndefined();
  });

  it('takes a folder, a Dockerfile, or both when the Dockerfile is inside', () => {
    mkdirSync(join(dir, 'ctx', 'sub'), { recursive: true });
    writeFileSync(join(dir, 'ctx', 'Dockerfile'), 'FROM x');
    writeFileSync(join(dir, 'ctx', 'sub', 'Alt.Dockerfile'), 'FROM x');
    expect(buildPaths({ tag: 't', context: join(dir, 'ctx') })).toEqual({ context: join(dir, 'ctx'), dockerfile: 'Dockerfile' });
    expect(buildPaths({ tag: 't', file: join(dir, 'ctx', 'sub', 'Alt.Dockerfile') })).toEqual({
      context: join(dir, 'ctx', 'sub'),
      dockerfile: 'Alt.Dockerfile',
    });
    expect(buildPaths({ tag: 't', context: join(dir, 'ctx'), file: 'sub/Alt.Dockerfile' }).dockerfile).toBe('sub/Alt.Dockerfile');
    expect(() => buildPaths({ tag: 't', context: join(dir, 'ctx', 'sub'), file: join(dir, 'ctx', 'Dockerfile') })).toThrow(
      /outside the build context/,
    );
    expect(() => buildPaths({ tag: 't', context: join(dir, 'nope') })).toThrow(/is not a folder/);
    expect(() => buildPaths({ tag: 't', context: join(dir, 'ctx', 'sub') })).toThrow(/Dockerfile does not exist/);
    expect(() => buildPaths({ tag: 't' })).toThrow(/nothing to build/);
  });

  it('refuses a tag Docker would refuse, saying what a tag looks like', () => {
    expect(() => validateTag('My Image')).toThrow(/"My Image" is not a Docker image name/);
    expect(() => validateTag('my/tool:1')).not.toThrow();
    expect(() => validateTag('localhost:5000/x/y:2')).not.toThrow();
  });

  it('lists VM images by name and by the path a VM boots from, with their users; refuses to remove a used one, naming the sandbox', async () => {
    mkdirSync(join(dir, 'machine', 'debian-desktop'), { recursive: true });
    writeFileSync(join(dir, 'machine', 'debian-desktop', 'image.json'), JSON.stringify({ disk: 'disk.qcow2', desktop: true }));
    writeFileSync(join(dir, 'cloud.img'), Buffer.alloc(4096));
    const rec = (name: string, image: string) => ({ name, backend: 'qemu', image }) as unknown as SandboxRecord;
    const svc = new ImageService({
      dataDir: join(dir, 'data'),
      instanceId: 'i',
      sandboxes: () => [rec('vm1', 'debian-desktop'), rec('vm2', join(dir, 'cloud.img'))],
      docker: () => null,
    });
    const { images, warnings } = await svc.list();
    expect(warnings[0]).toMatch(/Docker images are not listed: this Sandbox Desk has no docker backend/);
    // Only this test's images (the machine's own image folder is in the search path too).
    const mine = images.filter((i) => i.path?.startsWith(dir));
    expect(mine.map((i) => [i.kind, i.ref, i.usedBy, i.desktop, i.origin])).toEqual([
      ['vm', 'debian-desktop', ['vm1'], true, 'named'],
      ['vm', join(dir, 'cloud.img'), ['vm2'], null, 'used'],
    ]);
    await expect(svc.remove('debian-desktop')).rejects.toThrow(/image debian-desktop is used by sandbox vm1/);
  });
});

describe('VM templates in the image list', () => {
  it('are listed as kind vm-template with their image, inspected with template.json, and removed by image rm', async () => {
    const { QemuProvider } = await import('../sandbox/qemu/qemu-provider.js');
    const qemu = new QemuProvider({ dataDir: dir });
    const tdir = join(dir, 'qemu', 'templates', 'debian-test--512m-1cpu');
    mkdirSync(tdir, { recursive: true });
    writeFileSync(join(tdir, 'memory.bin'), 'm');
    writeFileSync(join(tdir, 'disk.qcow2'), 'd');
    const meta = {
      version: 1,
      ref: 'debian-test@512m-1cpu',
      image: 'debian-test',
      imageHash: 'ab'.repeat(32),
      options: { memoryMiB: 512, cpus: 1, desktop: false },
      user: 'agent',
      cpuType: null,
      accel: 'tcg',
      files: {},
      createdAt: '2026-12-05T10:00:00.000Z',
      buildSeconds: 300,
    };
    writeFileSync(join(tdir, 'template.json'), JSON.stringify(meta));
    const svc = new ImageService({ dataDir: dir, instanceId: 'i', sandboxes: () => [], docker: () => null, qemu: () => qemu });
    const { images } = await svc.list();
    expect(images.filter((i) => i.kind === 'vm-template')).toEqual([
      expect.objectContaining({ ref: 'debian-test@512m-1cpu', derivedFrom: 'debian-test', usedBy: [], path: tdir, desktop: false }),
    ]);
    expect((await svc.inspect('debian-test@512m-1cpu')).details).toMatchObject({ imageHash: meta.imageHash, buildSeconds: 300 });
    expect(await svc.remove('debian-test@512m-1cpu')).toEqual({ removed: 'debian-test@512m-1cpu' });
    expect((await svc.list()).images.some((i) => i.kind === 'vm-template')).toBe(false);
    svc.dispose();
  });
});
