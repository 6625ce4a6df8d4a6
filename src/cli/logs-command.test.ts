import { describe, expect, it } from 'vitest';
import { runMain } from '../../test/run-cli-main.js';
import { statsLine } from './logs-command.js';

describe('sandbox-desk logs / stats', () => {
  it('refuses a --tail that is not a number of lines, before opening the core', async () => {
    const r = await runMain(['logs', 'demo', '--tail', 'lots']);
    expect(r.code).toBe(125);
    expect(r.stderr).toMatch(/--tail "lots" is not a number of lines — e.g. --tail 100/);
  });
  it('refuses a source id that cannot be one, and a tail over the limit', async () => {
    expect((await runMain(['logs', 'demo', '--source', '../etc'])).stderr).toMatch(/log source is an id such as container, serial or app/);
    expect((await runMain(['logs', 'demo', '--tail', '99999'])).stderr).toMatch(/tail is more than 10000 lines/);
  });
  it('prints CPU and memory on one line', () => {
    expect(
      statsLine({ sandbox: 'vm', at: '', cpuPercent: 1, memoryBytes: 1.5 * 2 ** 30, memoryLimitBytes: 2 ** 30, memoryOf: 'vm-process' }),
    ).toBe('vm  cpu 1.0%  memory QEMU process 1536.0 MiB (guest 1024.0 MiB)\n');
    expect(statsLine({ sandbox: 'demo', at: '', cpuPercent: 12.34, memoryBytes: 64 * 2 ** 20, memoryLimitBytes: 2 ** 30 })).toBe(
      'demo  cpu 12.3%  memory 64.0 MiB / 1024.0 MiB\n',
    );
  });
});
