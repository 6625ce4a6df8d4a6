/**
 * The `ssh` plugin: any machine reachable over SSH as a sandbox. Built and loaded like a third-party
 * plugin (see docs/plugins.md): `sandbox-desk --plugin plugins/ssh sandbox create NAME --backend ssh
 * --option host=… --option port=… --option user=… --option key=/abs/path`.
 */
import type { PluginContext } from '../../../src/sandbox/plugin-api.js';
import { SshProvider } from './ssh-provider.js';

export const apiVersion = 1;

export function register(ctx: PluginContext): void {
  ctx.registerProvider(new SshProvider(ctx));
}
