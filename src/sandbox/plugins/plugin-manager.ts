import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SandboxDeskError } from '../../shared/errors.js';
import { PLUGIN_API_VERSION, type PluginLogger } from '../plugin-api.js';
import { PluginHostClient, type HostState } from '../plugin-host/plugin-host-client.js';
import { RemoteProvider } from '../plugin-host/remote-provider.js';
import type { RestartBudget } from '../plugin-host/restart-budget.js';
import type { SandboxProvider } from '../provider.js';
import type { ProviderRegistry } from '../registry.js';
import { projectRoot } from '../../platform/project-root.js';
import {
  discoverBuiltinPlugins,
  discoverInstalledPlugins,
  readPluginPath,
  type PluginCandidate,
  type PluginSource,
} from './plugin-discovery.js';
import { makePluginContext, pluginDataDir, pluginExport } from './plugin-context.js';
import { GuardedProvider, withTimeout } from './plugin-guard.js';
import { namesPlugin, type PluginIsolation, type PluginSettings } from './plugin-settings.js';

/** One plugin as `plugin list` shows it. */
export interface PluginReport {
  name: string;
  version: string | null;
  path: string;
  source: PluginSource;
  isolation: PluginIsolation;
  /** loaded: its backends are usable. failed: it never loaded (see error). crashed: its isolated host is down for good. */
  status: 'loaded' | 'failed' | 'crashed';
  providers: string[];
  error: string | null;
  warnings: string[];
  /** Isolated hosts only: restarts so far, and the host's process id while it runs. */
  host?: { state: HostState; crashes: number; pid: number | null };
}

function message(err: unknown): string {
  if (err instanceof SandboxDeskError) return err.oneLine();
  return err instanceof Error ? err.message : String(err);
}

/**
 * Finds plugins, loads each in-process or in its own isolated host, and registers their backends.
 * Loading never throws: a plugin that fails to import, registers a reserved name or exports junk is
 * listed with its error, and the app carries on with the others.
 */
export class PluginManager {
  private readonly reports: PluginReport[] = [];
  private readonly hosts = new Map<PluginReport, PluginHostClient>();

  constructor(
    private readonly opts: {
      registry: ProviderRegistry;
      dataDir: string;
      settings: PluginSettings;
      logger?: PluginLogger;
      /** Tests inject a budget with a fake clock. */
      restartBudget?: () => RestartBudget;
      /** Where the built-in plugins are (default: this package's own folder). */
      packageRoot?: string;
    },
  ) {}

  candidates(): PluginCandidate[] {
    const s = this.opts.settings;
    const found = s.builtin ? discoverBuiltinPlugins(this.opts.packageRoot ?? projectRoot()) : [];
    if (s.scanDataDir) found.push(...discoverInstalledPlugins(join(this.opts.dataDir, 'plugins')));
    found.push(...s.paths.map((p) => readPluginPath(p, 'cli')));
    // The same folder named twice (built in, config and --plugin) loads once; disabled ones not at all.
    const seen = new Set<string>();
    return found
      .filter((c) => (seen.has(c.entry ?? c.dir) ? false : (seen.add(c.entry ?? c.dir), true)))
      .filter((c) => !s.disabled.some((d) => namesPlugin(d, c.name)));
  }

  /** The names `plugins.disabled` holds, for `plugin list` to say what it left out. */
  disabled(): string[] {
    return [...this.opts.settings.disabled];
  }

  async loadAll(): Promise<PluginReport[]> {
    for (const c of this.candidates()) {
      const report: PluginReport = {
        name: c.name,
        version: c.version,
        path: c.dir,
        source: c.source,
        isolation: this.opts.settings.isolation,
        status: 'failed',
        providers: [],
        error: c.error,
        warnings: [],
      };
      this.reports.push(report);
      if (c.error || !c.entry) continue;
      try {
        const providers = report.isolation === 'host' ? await this.loadIsolated(c, report) : await this.loadInProcess(c, report);
        this.registerAll(providers, report);
        report.status = 'loaded';
      } catch (err) {
        report.error = message(err);
        const host = this.hosts.get(report);
        if (host) await host.dispose();
        this.hosts.delete(report);
      }
      if (report.error) this.log().warn(`plugin ${report.name}: ${report.error}`);
      // At debug: every CLI call loads the plugins, and "loaded" at info filled the app's log with one
      // line per plugin per call. A failure above stays a warning.
      else
        this.log().debug?.(
          `plugin ${report.name}: loaded (${report.isolation}, from ${report.source}), backends ${report.providers.join(', ')}`,
        );
    }
    return this.list();
  }

  private log(): PluginLogger {
    return this.opts.logger ?? { info: () => undefined, warn: () => undefined };
  }

  private loggerFor(report: PluginReport): PluginLogger {
    return {
      info: (m) => this.log().info(`plugin ${report.name}: ${m}`),
      warn: (m) => {
        report.warnings.push(String(m).slice(0, 500));
        if (report.warnings.length > 20) report.warnings.shift();
        this.log().warn(`plugin ${report.name}: ${m}`);
      },
    };
  }

  private async loadInProcess(c: PluginCandidate, report: PluginReport): Promise<SandboxProvider[]> {
    const ms = this.opts.settings.timeouts.shortMs;
    const timeout = (what: string) => () =>
      new SandboxDeskError('backend_unavailable', `plugin ${c.name}: ${what} did not finish within ${Math.round(ms / 1000)} s`, {
        hint: 'fix or remove the plugin',
      });
    let mod: unknown;
    try {
      mod = await withTimeout(import(pathToFileURL(c.entry!).href), ms, timeout('import'));
    } catch (err) {
      throw new SandboxDeskError('internal', `importing ${c.entry} threw: ${message(err)}`, {
        hint: 'fix the plugin (is it built?), or remove it',
      });
    }
    const plugin = pluginExport(mod, c.name);
    const { ctx, collected, seal } = makePluginContext({
      plugin: c.name,
      dataDir: this.opts.dataDir,
      isolation: 'in-process',
      logger: this.loggerFor(report),
    });
    try {
      await withTimeout(
        Promise.resolve().then(() => plugin.register(ctx)),
        ms,
        timeout('register(ctx)'),
      );
    } catch (err) {
      throw err instanceof SandboxDeskError ? err : new SandboxDeskError('internal', `register(ctx) threw: ${message(err)}`);
    } finally {
      seal();
    }
    return collected;
  }

  private async loadIsolated(c: PluginCandidate, report: PluginReport): Promise<SandboxProvider[]> {
    const host = new PluginHostClient({
      plugin: c.name,
      entry: c.entry!,
      dataDir: this.opts.dataDir,
      apiVersion: PLUGIN_API_VERSION,
      logger: this.loggerFor(report),
      loadTimeoutMs: this.opts.settings.timeouts.shortMs,
      ...(this.opts.restartBudget ? { budget: this.opts.restartBudget() } : {}),
    });
    this.hosts.set(report, host);
    pluginDataDir(this.opts.dataDir, c.name);
    const loaded = await host.load();
    report.warnings.push(...loaded.warnings.filter((w) => !report.warnings.includes(w)));
    return loaded.providers.map((d) => new RemoteProvider(d, host, c.name, this.opts.settings.timeouts));
  }

  /** All of a plugin's backends, or none: a plugin half-registered would be harder to reason about. */
  private registerAll(providers: SandboxProvider[], report: PluginReport): void {
    if (providers.length === 0)
      throw new SandboxDeskError('invalid_input', 'register(ctx) registered no backend', {
        hint: 'call ctx.registerProvider(provider) in register(ctx)',
      });
    const names: string[] = [];
    for (const p of providers) {
      let name: unknown;
      try {
        name = p.name;
      } catch (err) {
        throw new SandboxDeskError('invalid_input', `a provider's name getter threw: ${message(err)}`);
      }
      this.opts.registry.assertRegistrable(name);
      if (names.includes(name)) throw new SandboxDeskError('name_taken', `the plugin registers backend '${name}' twice`);
      names.push(name);
    }
    const timeouts = report.isolation === 'host' ? null : this.opts.settings.timeouts;
    providers.forEach((p, i) => this.opts.registry.register(new GuardedProvider(p, names[i]!, { plugin: report.name, timeouts })));
    report.providers = names;
  }

  list(): PluginReport[] {
    return this.reports.map((r) => {
      const host = this.hosts.get(r);
      if (!host) return { ...r };
      const out: PluginReport = { ...r, host: { state: host.state, crashes: host.crashes, pid: host.pid ?? null } };
      if (r.status === 'loaded' && host.state === 'given-up') {
        out.status = 'crashed';
        out.error = host.lastError;
      } else if (r.status === 'loaded' && host.lastError) {
        out.error = host.lastError;
      }
      return out;
    });
  }

  async dispose(): Promise<void> {
    await Promise.all([...this.hosts.values()].map((h) => h.dispose()));
  }
}
