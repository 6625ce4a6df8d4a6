import { describe, expect, it } from 'vitest';
import { diskFromDf, sampleFromStats } from './docker-observability.js';

describe('docker stats', () => {
  it('takes the page cache off the memory, like docker stats', () => {
    const s = sampleFromStats({
      read: '2026-01-01T00:00:01.000Z',
      cpu_stats: { cpu_usage: { total_usage: 5e9 } },
      memory_stats: { usage: 100 * 2 ** 20, limit: 512 * 2 ** 20, stats: { inactive_file: 40 * 2 ** 20 } },
    });
    expect(s).toEqual({
      cpuNs: 5e9,
      atMs: Date.parse('2026-01-01T00:00:01.000Z'),
      memoryBytes: 60 * 2 ** 20,
      memoryLimitBytes: 512 * 2 ** 20,
    });
  });
  it('has no sample for a stopped container (no counters) and uses the local clock without a read time', () => {
    expect(sampleFromStats({ read: '0001-01-01T00:00:00Z', memory_stats: {} })).toBeNull();
    expect(
      sampleFromStats({ read: '0001-01-01T00:00:00Z', cpu_stats: { cpu_usage: { total_usage: 1 } }, memory_stats: { usage: 5 } }, 42),
    ).toEqual({
      cpuNs: 1,
      atMs: 42,
      memoryBytes: 5,
      memoryLimitBytes: null,
    });
  });
});

describe('docker system df', () => {
  it('sums containers, volumes and the unshared build cache', () => {
    expect(
      diskFromDf({
        LayersSize: 1000,
        Containers: [{ SizeRw: 10 }, { SizeRw: 5 }, {}],
        Volumes: [{ UsageData: { Size: 7 } }, { UsageData: { Size: -1 } }],
        BuildCache: [{ Size: 3 }, { Size: 100, Shared: true }],
      }),
    ).toEqual({ images: 1000, containers: 15, volumes: 7, buildCache: 3 });
  });
});
