import type { SandboxProvider, SandboxRef } from '../sandbox/provider.js';

/**
 * A VM sandbox's accel as its backend reports it (`details.accel` of the qemu provider's status), for
 * `desktop status`; null for a backend that is not a VM or does not say.
 */
export async function vmAccel(provider: SandboxProvider, ref: SandboxRef): Promise<'kvm' | 'tcg' | null> {
  if (provider.isolation !== 'virtual-machine') return null;
  const accel = (await provider.status(ref)).details?.accel;
  return accel === 'kvm' || accel === 'tcg' ? accel : null;
}
