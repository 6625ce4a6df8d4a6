import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxDeskError, type ErrorCode } from '../../shared/errors.js';
import { measureHome } from '../measure-home.js';
import type { PluginContext, PluginLogger, SandboxDeskPlugin } from '../plugin-api.js';
import { PLUGIN_API_VERSION } from '../plugin-api.js';
import type { SandboxProvider } from '../provider.js';
import { runArgv } from '../run-argv.js';

/** The plugin's own state folder: `<data dir>/plugins-data/<plugin>` (scoped names flattened). */
export function pluginDataDir(dataDir: string, plugin: string): string {
  const dir = join(dataDir, 'plugins-data', plugin.replace(/^@/, '').replace(/[^A-Za-z0-9._-]/g, '_'));
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/**
 * Finds `register` in whatever the module exported: a named `register`, a default export with
 * `register`, or a default function. Junk is reported, not called.
 */
export function pluginExport(mod: unknown, plugin: string): SandboxDeskPlugin {
  const m = (mod ?? {}) as { register?: unknown; apiVersion?: unknown; default?: unknown };
  const d = m.default as { register?: unknown; apiVersion?: unknown } | ((...a: unknown[]) => unknown) | undefined;
  let found: SandboxDeskPlugin | null = null;
  if (typeof m.register === 'function')
    found = { apiVersion: m.apiVersion as number | undefined, register: m.register as SandboxDeskPlugin['register'] };
  else if (typeof d === 'function') found = { register: d as SandboxDeskPlugin['register'] };
  else if (d && typeof d === 'object' && typeof d.register === 'function')
    found = { apiVersion: d.apiVersion as number | undefined, register: d.register as SandboxDeskPlugin['register'] };
  if (!found) {
    throw new SandboxDeskError('invalid_input', `plugin ${plugin} exports no register(ctx) function`, {
      hint: 'export `function register(ctx)` or `default { apiVersion: 1, register(ctx) { … } }`; see docs/plugins.md',
    });
  }
  const v = found.apiVersion ?? PLUGIN_API_VERSION;
  if (v !== PLUGIN_API_VERSION) {
    throw new SandboxDeskError(
      'refused',
      `plugin ${plugin} was written for plugin API version ${String(v)}; this app speaks version ${PLUGIN_API_VERSION}`,
      {
        hint: 'install a version of the plugin made for this release of Sandbox Desk',
      },
    );
  }
  return found;
}

/**
 * Builds the `ctx` handed to `register`. Registrations are collected, not applied: the caller decides
 * (all of a plugin's providers, or none of them). Registrations after `register` returned are ignored.
 */
export function makePluginContext(opts: { plugin: string; dataDir: string; isolation: 'in-process' | 'host'; logger: PluginLogger }): {
  ctx: PluginContext;
  collected: SandboxProvider[];
  seal(): void;
} {
  const collected: SandboxProvider[] = [];
  let sealed = false;
  let stateDir: string | null = null;
  const ctx: PluginContext = {
    apiVersion: PLUGIN_API_VERSION,
    get dataDir() {
      return (stateDir ??= pluginDataDir(opts.dataDir, opts.plugin));
    },
    isolation: opts.isolation,
    logger: opts.logger,
    registerProvider(provider: SandboxProvider) {
      if (sealed) {
        opts.logger.warn(`registerProvider called after register() returned; ignored`);
        return;
      }
      if (!provider || typeof provider !== 'object')
        throw new SandboxDeskError('invalid_input', `plugin ${opts.plugin}: registerProvider needs a provider object`);
      collected.push(provider);
    },
    error(code: ErrorCode, message: string, o?: { hint?: string }) {
      return new SandboxDeskError(code, String(message), o?.hint ? { hint: String(o.hint) } : {});
    },
    helpers: {
      measureHome: (prefix, joinsArgv) => measureHome(prefix, joinsArgv),
      runArgv: (argv, o) => runArgv(argv, o),
    },
  };
  return { ctx, collected, seal: () => void (sealed = true) };
}
