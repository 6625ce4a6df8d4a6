import { describe, expect, it } from 'vitest';
import { memoryText } from './memory-text.js';

const gib = (n: number) => `${(n / 2 ** 30).toFixed(1)} GiB`;

describe('memory in words', () => {
  it('a VM: the QEMU process beside the guest size, never "1.3 GiB of 1.0 GiB"', () => {
    const vm = { memoryBytes: 1.3 * 2 ** 30, memoryLimitBytes: 2 ** 30, memoryOf: 'vm-process' as const };
    expect(memoryText(vm, gib)).toBe('QEMU process 1.3 GiB (guest 1.0 GiB)');
    expect(memoryText({ memoryBytes: 2 ** 29, memoryLimitBytes: 2 ** 30 }, gib)).toBe('0.5 GiB of 1.0 GiB');
    expect(memoryText({ memoryBytes: 2 ** 29, memoryLimitBytes: null }, gib)).toBe('0.5 GiB');
  });
});
