import { vmResources } from './qemu-observability.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SandboxRef } from '../provider.js';
import { cpuTicksFromStat, rssFromStatus, sampleProcess, vmLogs } from './qemu-observability.js';
import { vmFiles } from './vm-files.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function ref(dir: string, mounts = 0): SandboxRef {
  return {
    name: 'vm-logs',
    backendRef: dir,
    image: null,
    user: null,
    mounts: Array.from({ length: mounts }, (_, i) => ({ hostPath: `/tmp/h${i}`, sandboxPath: `/mnt/s${i}`, readOnly: false })),
    env: {},
    options: {},
  };
}

describe('VM log sources', () => {
  it('lists the serial console and one virtiofsd log per shared folder, saying which exist', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sdesk-vm-logs-'));
    dirs.push(dir);
    const files = vmFiles(dir);
    writeFileSync(files.serialLog, 'boot 1\nlogin:\n');
    const logs = vmLogs(() => files);
    const sources = await logs.sources(ref(dir, 1));
    expect(sources.map((s) => [s.id, s.exists])).toEqual([
      ['serial', true],
      ['virtiofsd-0', false],
    ]);
    expect(sources[1]!.detail).toMatch(/not there/);
    expect(await logs.read(ref(dir, 1), 'serial', 1)).toBe('login:\n');
    await expect(logs.read(ref(dir), 'virtiofsd-3', 1)).rejects.toThrow(/no log virtiofsd-3/);
  });
});

describe('QEMU process counters', () => {
  it('reads utime+stime past a name holding spaces and parens', () => {
    const stat = '4242 (qemu (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 350 150 0 0 20 0 3 0 12345 0 0';
    expect(cpuTicksFromStat(stat)).toBe(500);
  });
  it('reads VmRSS in bytes', () => {
    expect(rssFromStatus('Name:\tqemu\nVmRSS:\t  20480 kB\n')).toBe(20480 * 1024);
    expect(rssFromStatus('Name:\tzombie\n')).toBe(0);
  });
  it('samples this very process, and null for a pid that is gone', () => {
    const s = sampleProcess(process.pid, 1024);
    expect(s!.memoryBytes).toBeGreaterThan(0);
    expect(s!.cpuNs).toBeGreaterThan(0);
    expect(sampleProcess(2 ** 22 + 7, null)).toBeNull();
  });

  describe('memory label', () => {
    it("the VM backend's sample says its memory is the QEMU process's (a real process: this test's own)", async () => {
      const s = await vmResources(() => ({ pid: process.pid, memoryBytes: 2 ** 30 })).sample({ backendRef: 'x' } as never);
      expect(s?.memoryOf).toBe('vm-process');
      expect(s?.memoryLimitBytes).toBe(2 ** 30);
    });
  });
});
