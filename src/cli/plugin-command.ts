import type { Command } from 'commander';
import type { PluginInfo } from '../api/contract.js';
import type { DeskClient } from '../client/http-client.js';
import { namesPlugin } from '../sandbox/plugins/plugin-settings.js';
import { changeDisabled, type ConfigFile } from './config-command.js';
import { printJson, type Out } from './output.js';

/** `plugin list`: name, version, backends, isolation, status and error of every plugin found. */
export function pluginTable(list: PluginInfo[], disabled: string[] = []): string {
  const off = disabled.length ? `Disabled (plugins.disabled; \`plugin enable NAME\` turns one on): ${disabled.join(', ')}\n` : '';
  if (list.length === 0)
    return (
      'No plugins. Put one under <data dir>/plugins/, list it in config.json ("plugins": {"paths": [...]}), or pass --plugin PATH.\n' + off
    );
  const rows = [['NAME', 'VERSION', 'BACKENDS', 'ISOLATION', 'STATUS', 'ERROR']];
  for (const p of list) rows.push([p.name, p.version ?? '-', p.providers.join(',') || '-', p.isolation, p.status, p.error ?? '']);
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  let text =
    rows
      .map((r) =>
        r
          .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n';
  for (const p of list) for (const w of p.warnings) text += `warning: plugin ${p.name}: ${w}\n`;
  return text + off;
}

export function addPluginCommands(
  program: Command,
  client: () => Promise<DeskClient>,
  out: Out,
  config: () => ConfigFile,
  /** After a change: the running service learns of it (service-settings.ts). */
  changed: () => Promise<void> = async () => undefined,
): void {
  const plugin = program.command('plugin').description('plugin backends: what is installed, whether it loaded, and turning one on or off');
  plugin
    .command('list')
    .description('every plugin found, with its backends, isolation, status and error')
    .option('--json', 'machine-readable output')
    .action(async (o: { json?: boolean }) => {
      const c = await client();
      const list = await c.call('plugins', {});
      if (o.json) printJson(out, list);
      else out.stdout(pluginTable(list, await c.call('disabledPlugins', {})));
    });
  for (const verb of ['enable', 'disable'] as const) {
    plugin
      .command(`${verb} <name>`)
      .description(
        verb === 'enable'
          ? 'load this plugin again (removes it from plugins.disabled)'
          : 'stop loading this plugin, built-in ones too (adds it to plugins.disabled)',
      )
      .option('--json', 'machine-readable output')
      .action(async (name: string, o: { json?: boolean }) => {
        const r = changeDisabled(config(), name, verb === 'disable', namesPlugin);
        if (r.changed) await changed();
        if (o.json) return printJson(out, { plugin: name, enabled: verb === 'enable', changed: r.changed, disabled: r.disabled });
        if (!r.changed) out.stdout(`${name} is already ${verb}d.\n`);
        else
          out.stdout(
            `${verb === 'enable' ? 'Enabled' : 'Disabled'} ${name}: from the next start on it is ${verb === 'enable' ? '' : 'not '}loaded.\n`,
          );
      });
  }
}
