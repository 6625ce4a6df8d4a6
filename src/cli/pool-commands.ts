/**
 * `pool list|set|drain` (issue 37): the warm pools, through the service like every other command.
 * A pool is named by its template: --image (default sandbox-desk/base:latest), --cpus, --memory, --desktop.
 */
import type { Command } from 'commander';
import type { PoolsView } from '../shared/pool-types.js';
import type { DeskClient } from '../client/http-client.js';
import { SandboxDeskError } from '../shared/errors.js';
import { printJson, type Out } from './output.js';

interface TemplateFlags {
  image?: string;
  cpus?: string;
  memory?: string;
  desktop?: boolean;
}

function positive(flag: string, v: string | undefined, whole: boolean): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!(whole ? /^\d+$/ : /^\d+(\.\d+)?$/).test(v.trim()) || !(n > 0))
    throw new SandboxDeskError('invalid_input', `${flag} ${JSON.stringify(v)} is not a ${whole ? 'whole number' : 'positive number'}`, {
      hint: whole ? `e.g. ${flag} 512` : `e.g. ${flag} 1 or ${flag} 0.5`,
    });
  return n;
}

/** The template the flags name, as the contract takes it (the same flags `sandbox create` takes). */
export function templateFlags(o: TemplateFlags): { image?: string; cpus?: number; memoryMiB?: number; desktop: boolean } {
  return {
    ...(o.image !== undefined ? { image: o.image } : {}),
    ...(o.cpus !== undefined ? { cpus: positive('--cpus', o.cpus, false) } : {}),
    ...(o.memory !== undefined ? { memoryMiB: positive('--memory', o.memory, true) } : {}),
    desktop: Boolean(o.desktop),
  };
}

export function poolTable(v: PoolsView): string {
  const head = `memory: ${v.memoryMiB} of ${v.memoryBudgetMiB} MiB budget${v.refilling ? '' : ' (not refilling here: the service refills)'}\n`;
  if (v.pools.length === 0) return head + 'no warm pools (`sandbox-desk pool set --size N` makes one)\n';
  const rows = v.pools.map((p) => [
    p.description,
    `${p.ready}/${p.size} ready`,
    p.filling ? `${p.filling} filling` : '',
    p.state,
    p.warning ?? '',
  ]);
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return (
    head +
    rows
      .map(
        (r) =>
          r
            .map((c, i) => c.padEnd(widths[i]!))
            .join('  ')
            .trimEnd() + '\n',
      )
      .join('')
  );
}

function withTemplateFlags(cmd: Command): Command {
  return cmd
    .option('--image <image>', 'the pool’s docker image (default sandbox-desk/base:latest)')
    .option('--cpus <n>', 'the CPU limit its sandboxes get when claimed (default none)')
    .option('--memory <MiB>', 'the memory limit its sandboxes get (default none: capped at 256 MiB, 1024 with --desktop, while they wait)')
    .option('--desktop', 'sandboxes with the bot desktop, started ahead (a claim’s first frame is warm)');
}

export function addPoolCommands(program: Command, client: () => Promise<DeskClient>, out: Out): void {
  const pool = program
    .command('pool')
    .description('warm pools: sandboxes made ahead, claimed by `sandbox create` with the same template (off until `pool set`)');

  pool
    .command('list')
    .description('each pool: its template, ready/size, state and warning; the memory budget')
    .option('--json', 'machine-readable output')
    .action(async (o: { json?: boolean }) => {
      const v = await (await client()).call('poolList', {});
      if (o.json) printJson(out, v);
      else out.stdout(poolTable(v));
    });

  withTemplateFlags(pool.command('set').description('keep N ready sandboxes of a template (--size 0 removes the pool)'))
    .requiredOption('--size <n>', 'how many ready sandboxes to keep (0-32)')
    .option('--json', 'machine-readable output')
    .action(async (o: TemplateFlags & { size: string; json?: boolean }) => {
      if (!/^\d+$/.test(o.size.trim()) || Number(o.size) > 32)
        throw new SandboxDeskError('invalid_input', `--size ${JSON.stringify(o.size)} is not a whole number from 0 to 32`, {
          hint: 'e.g. --size 2 (0 removes the pool)',
        });
      const v = await (await client()).call('poolSet', { ...templateFlags(o), size: Number(o.size) });
      if (o.json) printJson(out, v);
      else out.stdout(poolTable(v));
    });

  withTemplateFlags(pool.command('drain').description('remove a pool’s ready sandboxes now and the pool from the config (or --all)'))
    .option('--all', 'every pool')
    .option('--json', 'machine-readable output')
    .action(async (o: TemplateFlags & { all?: boolean; json?: boolean }) => {
      const named = o.image !== undefined || o.cpus !== undefined || o.memory !== undefined || o.desktop !== undefined;
      if (!named && !o.all)
        throw new SandboxDeskError('invalid_input', 'say which pool to drain', {
          hint: 'name its template (--image, --cpus, --memory, --desktop as `pool list` shows it), or --all',
        });
      const r = await (await client()).call('poolDrain', o.all ? { all: true } : { template: templateFlags(o) });
      if (o.json) printJson(out, r);
      else out.stdout(`Removed ${r.removed} pooled sandbox(es).\n`);
    });
}
