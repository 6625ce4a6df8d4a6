/**
 * A VM's log sources and resource figures through the real QEMU backend, without a boot (a TCG boot
 * takes minutes on a loaded machine; the readers themselves are unit-tested on files): a VM that was
 * made but never started lists its serial console and virtiofsd log as not there, says why, and has
 * nothing to measure.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { imageSearchPath } from '../../src/sandbox/qemu/vm-image.js';
import { rejectsWith } from '../expect-error.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

describe('a VM that has not booted: its logs and resources', () => {
  let t: TestDesk;
  const vm = uniqueName('vm-logs');
  const shared = mkdtempSync(join(tmpdir(), 'sdesk-vm-logs-share-'));

  beforeAll(async () => {
    const found = imageSearchPath('/nonexistent').some((d) => existsSync(join(d, 'debian-test', 'image.json')));
    if (!found) throw new Error('the qemu tests need the debian-test VM image: run `npm run setup` (it builds it)');
    t = tempDesk();
    await t.desk.createSandbox({
      name: vm,
      backend: 'qemu',
      image: 'debian-test',
      start: false,
      mounts: [{ hostPath: shared, sandboxPath: '/home/agent/work' }],
    });
  }, 120_000);
  afterAll(async () => {
    await t?.dispose();
    rmSync(shared, { recursive: true, force: true });
  }, 120_000);

  it('lists the serial console and the virtiofsd log, not there yet, with where they will be', async () => {
    const sources = await t.desk.logs.sources(vm);
    const backend = sources.filter((s) => s.kind === 'backend');
    expect(backend.map((s) => [s.id, s.exists])).toEqual([
      ['serial', false],
      ['virtiofsd-0', false],
    ]);
    expect(backend[0]!.detail).toMatch(/serial\.log is not there \(the VM has not booted yet\)/);
    expect(sources.filter((s) => s.kind === 'desktop').every((s) => !s.exists && s.detail === 'the sandbox is not running')).toBe(true);
  });

  it('refuses to read the serial console that is not there, and has nothing to measure', async () => {
    const e = await rejectsWith(t.desk.logs.read(vm, 'serial', 10), 'not_found');
    expect(e.message).toMatch(new RegExp(`log source serial of sandbox ${vm} does not exist: .*not booted yet`));
    await rejectsWith(t.desk.stats.sample(vm), 'sandbox_not_running');
  });
});
