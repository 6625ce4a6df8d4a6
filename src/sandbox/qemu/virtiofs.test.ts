import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { thrown } from '../../../test/expect-error.js';
import { vmFiles } from './vm-files.js';
import { checkMounts, guestMounts, sharesFor, virtiofsQemuArgs } from './virtiofs.js';

const host = mkdtempSync(join(tmpdir(), 'sdesk-share-'));
afterAll(() => rmSync(host, { recursive: true, force: true }));

describe('virtiofs shares', () => {
  const shares = sharesFor(vmFiles('/d/qemu/vms/a'), [
    { hostPath: '/src/one', sandboxPath: '/home/agent/one' },
    { hostPath: '/src/two', sandboxPath: '/mnt/two' },
  ]);

  it('one tag, socket and log per share, in order', () => {
    expect(shares.map((s) => [s.tag, s.socket, s.log])).toEqual([
      ['sdesk0', '/d/qemu/vms/a/vfs0.sock', '/d/qemu/vms/a/virtiofsd-0.log'],
      ['sdesk1', '/d/qemu/vms/a/vfs1.sock', '/d/qemu/vms/a/virtiofsd-1.log'],
    ]);
    expect(guestMounts(shares)).toEqual([
      { tag: 'sdesk0', path: '/home/agent/one' },
      { tag: 'sdesk1', path: '/mnt/two' },
    ]);
  });

  it('QEMU shares guest memory with virtiofsd and gets one vhost-user-fs device per share', () => {
    expect(virtiofsQemuArgs([], 1024)).toEqual([]);
    expect(virtiofsQemuArgs(shares, 2048)).toEqual([
      '-object',
      'memory-backend-memfd,id=mem,size=2048M,share=on',
      '-numa',
      'node,memdev=mem',
      '-chardev',
      'socket,id=vfs0,path=/d/qemu/vms/a/vfs0.sock',
      '-device',
      'vhost-user-fs-pci,chardev=vfs0,tag=sdesk0',
      '-chardev',
      'socket,id=vfs1,path=/d/qemu/vms/a/vfs1.sock',
      '-device',
      'vhost-user-fs-pci,chardev=vfs1,tag=sdesk1',
    ]);
  });

  it.runIf(process.getuid?.() === 0)('refuses read-only shares, folders that do not exist and unmountable paths, saying why', () => {
    expect(() => checkMounts([{ hostPath: host, sandboxPath: '/mnt/ok' }])).not.toThrow();
    expect(thrown(() => checkMounts([{ hostPath: host, sandboxPath: '/mnt/x', readOnly: true }])).message).toMatch(
      /read-only shares are not supported for VMs/,
    );
    expect(thrown(() => checkMounts([{ hostPath: join(host, 'nope'), sandboxPath: '/mnt/x' }])).message).toMatch(
      /is not a directory on this machine/,
    );
    expect(thrown(() => checkMounts([{ hostPath: host, sandboxPath: '/mnt/a\tb' }])).message).toMatch(/cannot contain tabs or line breaks/);
  });
});
