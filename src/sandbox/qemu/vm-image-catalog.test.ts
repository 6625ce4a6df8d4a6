import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildVmImage, listVmImages, vmBuildEvent } from './vm-image-catalog.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sdesk-vmcat-'));
  process.env.SANDBOX_DESK_VM_IMAGES = join(dir, 'machine');
});
afterEach(() => {
  delete process.env.SANDBOX_DESK_VM_IMAGES;
  rmSync(dir, { recursive: true, force: true });
});

function image(root: string, name: string, meta: Record<string, unknown>): void {
  mkdirSync(join(root, name), { recursive: true });
  writeFileSync(join(root, name, 'image.json'), JSON.stringify({ name, disk: 'disk.qcow2', ...meta }));
  writeFileSync(join(root, name, 'disk.qcow2'), Buffer.alloc(8192, 1));
}

describe('VM image catalog', () => {
  it('lists named images of the search path with size, build time and desktop from image.json; the first of a name wins', () => {
    image(join(dir, 'machine'), 'debian-desktop', { built_at: '2026-01-01T00:00:00Z', desktop: true });
    image(join(dir, 'machine'), 'debian-test', {});
    image(join(dir, 'data', 'images'), 'debian-test', { desktop: false });
    mkdirSync(join(dir, 'machine', 'not-an-image'));
    const list = listVmImages(join(dir, 'data'));
    expect(list.map((i) => [i.name, i.desktop, i.dir.startsWith(join(dir, 'machine'))])).toEqual([
      ['debian-desktop', true, true],
      ['debian-test', null, true],
    ]);
    expect(list[0]!.createdAt).toBe('2026-01-01T00:00:00Z');
    expect(list[0]!.sizeBytes).toBeGreaterThanOrEqual(8192);
  });

  it("reads the builder's stage lines as steps", () => {
    expect(vmBuildEvent('[build-vm-image +  3s] stage 2/6: chroot apt-get install')).toEqual({
      kind: 'step',
      text: 'chroot apt-get install',
      step: 2,
      total: 6,
    });
    expect(vmBuildEvent('[build-vm-image +  3s]   fetched 12 MB')).toEqual({
      kind: 'output',
      text: '[build-vm-image +  3s]   fetched 12 MB',
    });
  });

  const script = (body: string): string => {
    const p = join(dir, 'build.sh');
    writeFileSync(p, `#!/usr/bin/env bash\n${body}\n`);
    chmodSync(p, 0o755);
    return p;
  };

  it('runs the builder with NAME OUTDIR and streams its lines; a failure shows its last lines', async () => {
    const events: string[] = [];
    const ok = script('echo "[build-x +0s] stage 1/1: make $1 into $2"');
    await buildVmImage({ name: 'debian-test', outDir: '/out', script: ok, onEvent: (e) => events.push(`${e.kind}:${e.text}`) });
    expect(events).toEqual(['step:make debian-test into /out']);
    const bad = script('echo "[build-x +0s] stage 1/2: debootstrap"; echo "E: mirror unreachable" >&2; exit 4');
    await expect(buildVmImage({ name: 'debian-test', outDir: '/out', script: bad, onEvent: () => undefined })).rejects.toThrow(
      /the build of VM image debian-test failed \(exit 4\):[\s\S]*E: mirror unreachable/,
    );
  });

  it('refuses a name it has no recipe for', async () => {
    await expect(buildVmImage({ name: 'ubuntu-24', outDir: '/out', onEvent: () => undefined })).rejects.toThrow(
      /no VM image recipe named ubuntu-24/,
    );
  });

  it('a cancel ends the builder and what it started (its process group)', async () => {
    const marker = join(dir, 'child.pid');
    const slow = script(`sleep 300 & echo $! > ${marker}; echo "[build-x +0s] stage 1/1: waiting"; wait`);
    const abort = new AbortController();
    const done = buildVmImage({
      name: 'debian-test',
      outDir: '/out',
      script: slow,
      signal: abort.signal,
      onEvent: (e) => e.kind === 'step' && abort.abort(),
    });
    await expect(done).rejects.toThrow(/cancelled/);
    const { readFileSync } = await import('node:fs');
    const pid = Number(readFileSync(marker, 'utf8'));
    await new Promise((r) => setTimeout(r, 200));
    // Gone, or a zombie waiting for a reaper (this container's init may not reap): not running either way.
    const state = (() => {
      try {
        return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0];
      } catch {
        return 'gone';
      }
    })();
    expect(['gone', 'Z']).toContain(state);
  });
});
