import { describe, expect, it } from 'vitest';
import { limitsHostConfig, parseDockerOptions } from './docker-options.js';

describe('docker options', () => {
  it('CPU and memory limits become NanoCpus and Memory (swap the same)', () => {
    const o = parseDockerOptions({ cpus: '1.5', memory: '512' });
    expect(o).toEqual({ cpus: 1.5, memoryMiB: 512, desktop: false });
    expect(limitsHostConfig(o)).toEqual({ NanoCpus: 1_500_000_000, Memory: 512 * 2 ** 20, MemorySwap: 512 * 2 ** 20 });
  });

  it('no options: no limits', () => {
    expect(limitsHostConfig(parseDockerOptions({}))).toEqual({});
  });

  it('refuses what is not a number, with what to give', () => {
    expect(() => parseDockerOptions({ cpus: 'two' })).toThrow(/--cpus "two" is not a number of CPUs/);
    expect(() => parseDockerOptions({ cpus: '0' })).toThrow(/--cpus/);
    expect(() => parseDockerOptions({ memory: '1.5' })).toThrow(/--memory "1.5" is not a size in MiB of at least 16/);
    expect(() => parseDockerOptions({ memory: '8' })).toThrow(/at least 16/);
    expect(() => parseDockerOptions({ desktop: 'yes' })).toThrow(/desktop="yes" is not true or false/);
  });

  it('desktop=true asks for the desktop variant', () => {
    expect(parseDockerOptions({ desktop: 'true' }).desktop).toBe(true);
  });
});
