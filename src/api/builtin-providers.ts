import { DockerProvider } from '../sandbox/docker/docker-provider.js';
import { LocalProvider } from '../sandbox/local/local-provider.js';
import { QemuProvider } from '../sandbox/qemu/qemu-provider.js';
import type { ProviderContext } from '../sandbox/provider.js';
import { startTemplateDesktop } from '../desktop/template-desktop.js';
import { ProviderRegistry } from '../sandbox/registry.js';

/** The registry with the backends that ship with Sandbox Desk. */
export function builtinRegistry(ctx: ProviderContext): ProviderRegistry {
  const registry = new ProviderRegistry();
  registry.registerBuiltin(new LocalProvider());
  registry.registerBuiltin(new DockerProvider(undefined, ctx));
  // A --desktop VM template's desktop is started and checked by the desktop's own code.
  registry.registerBuiltin(new QemuProvider(ctx, { templateDesktop: startTemplateDesktop }));
  return registry;
}
