import { describe, expect, it } from 'vitest';
import type { SandboxProvider, SandboxRef } from '../sandbox/provider.js';
import { vmAccel } from './vm-accel.js';

const ref = { name: 'v' } as SandboxRef;
const provider = (isolation: string, details: Record<string, unknown> | undefined): SandboxProvider =>
  ({ isolation, status: async () => ({ state: 'running', incarnation: 'x', details }) }) as unknown as SandboxProvider;

describe('vmAccel', () => {
  it("reads a VM backend's accel from its status", async () => {
    expect(await vmAccel(provider('virtual-machine', { accel: 'tcg' }), ref)).toBe('tcg');
    expect(await vmAccel(provider('virtual-machine', { accel: 'kvm' }), ref)).toBe('kvm');
  });
  it('is null for containers and for a status that does not say', async () => {
    expect(await vmAccel(provider('container', { accel: 'tcg' }), ref)).toBeNull();
    expect(await vmAccel(provider('virtual-machine', { accel: 'auto' }), ref)).toBeNull();
    expect(await vmAccel(provider('virtual-machine', undefined), ref)).toBeNull();
  });
});
