/**
 * The `podman` plugin: Podman containers as sandboxes. Built and loaded like a third-party plugin:
 * `sandbox-desk --plugin plugins/podman sandbox create NAME --backend podman [--image IMAGE]`.
 */
import type { PluginContext } from '../../../src/sandbox/plugin-api.js';
import { PodmanProvider } from './podman-provider.js';

export const apiVersion = 1;

export function register(ctx: PluginContext): void {
  ctx.registerProvider(new PodmanProvider(ctx));
}
