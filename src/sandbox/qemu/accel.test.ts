import { describe, expect, it } from 'vitest';
import { decideAccel, kvmDeviceUsable, type KvmVerdict } from './accel.js';

const usable = { usable: true, why: '/dev/kvm opens read-write' };
const absent = { usable: false, why: '/dev/kvm does not exist' };
const verdict = (works: boolean): KvmVerdict => ({
  works,
  kernel: 'k',
  at: '2026-01-01T00:00:00Z',
  detail: 'no serial output within 10 s under KVM',
});

describe('decideAccel', () => {
  it('never trusts the device node alone: auto tries KVM on probation until a guest has booted under it', () => {
    expect(decideAccel('auto', usable, null, '/v.json')).toEqual({ accel: 'kvm', probation: true, warning: null });
    expect(decideAccel('auto', usable, verdict(true), '/v.json')).toEqual({ accel: 'kvm', probation: false, warning: null });
  });

  it('uses TCG, with a warning saying why and how to retry, where a KVM guest hung before', () => {
    const d = decideAccel('auto', usable, verdict(false), '/data/qemu/kvm-verdict.json');
    expect(d.accel).toBe('tcg');
    expect(d.warning).toContain('no serial output within 10 s under KVM');
    expect(d.warning).toContain('Delete /data/qemu/kvm-verdict.json to try KVM again');
  });

  it('uses TCG without KVM, and does what it is told for kvm and tcg', () => {
    expect(decideAccel('auto', absent, null, '/v').accel).toBe('tcg');
    expect(decideAccel('tcg', usable, verdict(true), '/v')).toEqual({ accel: 'tcg', probation: false, warning: null });
    expect(decideAccel('kvm', usable, verdict(false), '/v')).toEqual({ accel: 'kvm', probation: false, warning: null });
  });
});

describe('kvmDeviceUsable', () => {
  it('says why a device cannot be used', () => {
    expect(kvmDeviceUsable('/nonexistent/kvm')).toEqual({ usable: false, why: '/nonexistent/kvm does not exist' });
  });
});
