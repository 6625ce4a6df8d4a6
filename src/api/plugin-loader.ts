import { SandboxDeskError } from '../shared/errors.js';
import type { PluginLogger } from '../sandbox/plugin-api.js';
import { PluginManager, type PluginReport } from '../sandbox/plugins/plugin-manager.js';
import { mergeSettings, type PluginSettingsInput } from '../sandbox/plugins/plugin-settings.js';
import type { SandboxProvider } from '../sandbox/provider.js';
import type { ProviderRegistry } from '../sandbox/registry.js';

/**
 * Plugin backends, loaded in the background (a slow or broken plugin never blocks the app from
 * opening), and the backend lookup that waits for loading to settle — so a plugin sandbox works from
 * the first call of the CLI, `serve`, MCP and the window.
 */
export class PluginLoader {
  private readonly manager: PluginManager | null;
  /** Settles once every plugin has loaded or failed; never rejects. */
  readonly ready: Promise<void>;
  private readonly configError: string | null;

  /**
   * `fromConfig` is the config's `plugins` section (the first settings layer, under the caller's
   * `input`); `configError` says why the config could not be used, so `plugin list` can show it.
   */
  constructor(
    private readonly registry: ProviderRegistry,
    private readonly dataDir: string,
    input: PluginSettingsInput | false,
    opts: { fromConfig: PluginSettingsInput; configError: string | null; logger: PluginLogger },
  ) {
    this.configError = opts.configError;
    this.manager =
      input === false
        ? null
        : new PluginManager({ registry, dataDir, settings: mergeSettings(opts.fromConfig, input), logger: opts.logger });
    this.ready = this.manager
      ? this.manager.loadAll().then(
          () => undefined,
          () => undefined,
        )
      : Promise.resolve();
  }

  /** The names `plugins.disabled` left out of loading (`plugin list` mentions them). */
  disabled(): string[] {
    return this.manager?.disabled() ?? [];
  }

  /** Every plugin found, loaded or not, with its backends, isolation, status and error. */
  async list(): Promise<PluginReport[]> {
    await this.ready;
    const list = this.manager?.list() ?? [];
    if (this.configError) {
      list.unshift({
        name: 'config.json',
        version: null,
        path: this.dataDir,
        source: 'config',
        isolation: 'in-process',
        status: 'failed',
        providers: [],
        error: this.configError,
        warnings: [],
      });
    }
    return list;
  }

  /** A backend by name, once plugins have loaded; an unknown name points at a plugin that failed. */
  async providerOf(name: string): Promise<SandboxProvider> {
    await this.ready;
    if (!this.registry.has(name)) {
      const failed = (this.manager?.list() ?? []).filter((p) => p.status !== 'loaded');
      if (failed.length) {
        throw new SandboxDeskError(
          'unknown_backend',
          `unknown backend '${name}'; plugin${failed.length === 1 ? '' : 's'} ${failed.map((p) => p.name).join(', ')} did not load`,
          {
            hint: 'see `sandbox-desk plugin list` for why',
          },
        );
      }
    }
    return this.registry.get(name);
  }

  /** Ends every backend (plugin hosts included) once loading has settled. */
  async dispose(): Promise<void> {
    await this.ready;
    for (const p of this.registry.all()) await p.dispose?.();
    await this.manager?.dispose();
  }
}
