import type { Command } from 'commander';
import type { SandboxDesk } from '../api/sandbox-desk.js';
import type { PluginReport } from '../sandbox/plugins/plugin-manager.js';
import { printJson, type Out } from './output.js';

/** `plugin list`: name, version, backends, isolation, status and error of every plugin found. */
export function pluginTable(list: PluginReport[]): string {
  if (list.length === 0) return 'No plugins. Put one under <data dir>/plugins/, list it in config.json ("plugins": {"paths": [...]}), or pass --plugin PATH.\n';
  const rows = [['NAME', 'VERSION', 'BACKENDS', 'ISOLATION', 'STATUS', 'ERROR']];
  for (const p of list) rows.push([p.name, p.version ?? '-', p.providers.join(',') || '-', p.isolation, p.status, p.error ?? '']);
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  let text = rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n') + '\n';
  for (const p of list) for (const w of p.warnings) text += `warning: plugin ${p.name}: ${w}\n`;
  return text;
}

export function addPluginCommands(program: Command, core: () => SandboxDesk, out: Out): void {
  const plugin = program.command('plugin').description('plugin backends: what is installed and whether it loaded');
  plugin
    .command('list')
    .description('every plugin found, with its backends, isolation, status and error')
    .option('--json', 'machine-readable output')
    .action(async (o: { json?: boolean }) => {
      const list = await core().listPlugins();
      if (o.json) printJson(out, list);
      else out.stdout(pluginTable(list));
    });
}
