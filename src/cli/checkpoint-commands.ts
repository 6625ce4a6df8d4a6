import { byteSize } from '../shared/byte-size.js';
import type { Command } from 'commander';
import type { CheckpointInfo } from '../api/contract.js';
import type { DeskClient } from '../client/http-client.js';
import { withOperationProgress, type ProgressLine } from './operation-progress.js';
import { SandboxDeskError } from '../shared/errors.js';
import { printJson, printWarnings, type Out } from './output.js';

interface JsonFlag {
  json?: boolean;
}

type Printer = (out: Out, json: boolean | undefined) => (e: ProgressLine) => void;

/** `--count` as given on the command line: a whole number, checked against the range by the API. */
function countOf(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!/^-?\d+$/.test(v.trim()))
    throw new SandboxDeskError('invalid_input', `--count must be a whole number, got ${JSON.stringify(v)}`, {
      hint: 'give how many forks to make, 1 to 20',
    });
  return Number(v);
}

export function formatBytes(n: number | null): string {
  return n === null ? '-' : byteSize(n);
}

export function checkpointTable(list: CheckpointInfo[]): string {
  if (list.length === 0) return 'No checkpoints: take one with `sandbox-desk sandbox checkpoint NAME`.\n';
  const rows = [
    ['ID', 'SANDBOX', 'LABEL', 'CREATED', 'SIZE', 'MEMORY', 'STATE'],
    ...list.map((c) => [
      c.id,
      c.sandbox,
      c.label ?? '-',
      c.createdAt,
      formatBytes(c.sizeBytes),
      c.memory ? 'yes' : 'disk only',
      c.broken ? `broken: ${c.brokenDetail ?? ''}` : 'ok',
    ]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}

/**
 * Checkpoints (issue 15): `sandbox checkpoint|restore|fork|pause|resume` beside start/stop, and
 * `checkpoint list|rm` for the checkpoints themselves.
 */
export function addCheckpointCommands(
  program: Command,
  sandbox: Command,
  client: () => Promise<DeskClient>,
  out: Out,
  progress: Printer,
): void {
  sandbox
    .command('checkpoint <name>')
    .description("save a sandbox's disk (with --memory: its running state too) and its sessions' working directories")
    .option('--label <text>', 'a label to find it by')
    .option('--memory', 'save the memory too (refused with the reason where the backend cannot)')
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: JsonFlag & { label?: string; memory?: boolean }) => {
      const api = await client();
      const r = await withOperationProgress(api, name, progress(out, o.json), () =>
        api.call('checkpointSandbox', { sandbox: name, label: o.label, memory: Boolean(o.memory) }),
      );
      if (o.json) return printJson(out, r);
      printWarnings(out, r.warnings);
      const c = r.checkpoint;
      out.stdout(`Checkpoint ${c.id} of ${c.sandbox} (${c.memory ? 'with memory' : 'disk only'}, ${formatBytes(c.sizeBytes)}).\n`);
    });

  sandbox
    .command('restore <name> <checkpoint>')
    .description('put a sandbox back to one of its checkpoints; sessions come back at their directories, re-measured')
    .option('--json', 'machine-readable output')
    .action(async (name: string, id: string, o: JsonFlag) => {
      const c = await client();
      const r = await withOperationProgress(c, name, progress(out, o.json), () =>
        c.call('restoreSandbox', { sandbox: name, checkpoint: id }),
      );
      if (o.json) return printJson(out, r);
      printWarnings(out, r.warnings);
      out.stdout(`Restored ${name} to checkpoint ${id} (${r.sessions.length} session${r.sessions.length === 1 ? '' : 's'}).\n`);
    });

  sandbox
    .command('fork <name> <checkpoint>')
    .description('make new sandboxes from a checkpoint: NEW, or NEW-1 … NEW-N with --count')
    .requiredOption('--as <new>', 'the new sandbox name (with --count: the prefix)')
    .option('--count <n>', 'how many forks (1 to 20)')
    .option('--json', 'machine-readable output')
    .action(async (name: string, id: string, o: JsonFlag & { as: string; count?: string }) => {
      // Checked before the core opens: a typo costs nothing.
      const count = countOf(o.count);
      const c = await client();
      const r = await withOperationProgress(c, name, progress(out, o.json), () =>
        c.call('forkSandbox', { sandbox: name, checkpoint: id, as: o.as, count }),
      );
      if (o.json) return printJson(out, r);
      printWarnings(out, r.warnings);
      out.stdout(`Forked ${r.sandboxes.map((s) => s.name).join(', ')} from checkpoint ${id}.\n`);
    });

  for (const verb of ['pause', 'resume'] as const) {
    sandbox
      .command(`${verb} <name>`)
      .description(verb === 'pause' ? 'freeze every process of a sandbox' : 'thaw a paused sandbox')
      .option('--json', 'machine-readable output')
      .action(async (name: string, o: JsonFlag) => {
        const info = await (await client()).call(verb === 'pause' ? 'pauseSandbox' : 'resumeSandbox', { name });
        if (o.json) printJson(out, info);
        else out.stdout(`${info.name}: ${info.state}\n`);
      });
  }

  const checkpoint = program.command('checkpoint').description('list and remove checkpoints');
  checkpoint
    .command('list [name]')
    .description('checkpoints (of one sandbox when named): id, label, time, size, memory, broken ones marked')
    .option('--json', 'machine-readable output')
    .action(async (name: string | undefined, o: JsonFlag) => {
      const list = await (await client()).call('listCheckpoints', { sandbox: name });
      if (o.json) printJson(out, list);
      else out.stdout(checkpointTable(list));
    });
  checkpoint
    .command('rm <id>')
    .description('remove a checkpoint and what the backend saved for it')
    .option('--json', 'machine-readable output')
    .action(async (id: string, o: JsonFlag) => {
      await (await client()).call('removeCheckpoint', { id });
      if (o.json) printJson(out, { removed: id });
      else out.stdout(`Removed checkpoint ${id}.\n`);
    });
}
