import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { rejectsWith, thrown } from '../../../test/expect-error.js';
import { checkBaseUnchanged, diskFingerprint, inspectDisk, resolveBaseImage } from './vm-image.js';

const dir = mkdtempSync(join(tmpdir(), 'sdesk-vm-image-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('base images', () => {
  it('reads a qcow2 with qemu-img, and a path is taken as a disk booted through its own bootloader', async () => {
    const disk = join(dir, 'small.qcow2');
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', disk, '64M']);
    expect(await inspectDisk(disk)).toEqual({ format: 'qcow2', virtualSize: 64 * 2 ** 20 });
    expect(await resolveBaseImage(disk, dir)).toMatchObject({ name: null, disk, format: 'qcow2', kernel: null, initrd: null });
  });

  it('refuses what is not a disk image, saying what it is', async () => {
    const junk = join(dir, 'notes.img');
    writeFileSync(junk, 'hello\n');
    expect((await rejectsWith(inspectDisk(junk), 'image_invalid')).message).toMatch(/is not a disk image \(6 bytes/);
    expect((await rejectsWith(inspectDisk(join(dir, 'nope.qcow2')), 'image_not_found')).hint).toMatch(/debian-test/);
  });

  it('an overlay only boots over the exact base it was made on', () => {
    const disk = join(dir, 'base.qcow2');
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', disk, '16M']);
    const fingerprint = diskFingerprint(disk)!;
    expect(() => checkBaseUnchanged({ disk, fingerprint })).not.toThrow();
    utimesSync(disk, new Date(), new Date(Date.now() + 60_000)); // rebuilt in place
    const changed = thrown(() => checkBaseUnchanged({ disk, fingerprint }));
    expect(changed.code).toBe('image_invalid');
    expect(changed.message).toMatch(/changed since the VM was created/);
    expect(changed.hint).toMatch(/create it again/);
    rmSync(disk);
    expect(thrown(() => checkBaseUnchanged({ disk, fingerprint })).code).toBe('image_not_found');
  });
});
