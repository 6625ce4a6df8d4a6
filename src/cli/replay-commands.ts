import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { resolve } from 'node:path';
import type { DeskClient } from '../client/http-client.js';
import { SandboxDeskError } from '../shared/errors.js';
import type { ReplayEvent, ReplayRecording } from '../shared/replay-types.js';
import { parseTimeArg } from '../shared/time-arg.js';
import { formatBytes } from './checkpoint-commands.js';
import { printJson, type Out } from './output.js';
import { progressLine } from './progress-line.js';

interface JsonFlag {
  json?: boolean;
}

function recordingTable(list: ReplayRecording[]): string {
  if (list.length === 0) return 'Nothing recorded yet: terminals, desktops and commands are recorded while config replay.record is true.\n';
  return (
    list
      .map((r) => {
        const head = `${r.sandbox}${r.recording ? ' (recording now)' : ''}: ${r.startedAt ?? '-'} – ${r.endedAt ?? '-'}, ${formatBytes(r.bytes)} of ${formatBytes(r.limitBytes)}`;
        const screen = r.screen
          ? `  screen ${r.screen.width}x${r.screen.height}, ${r.screen.startedAt} – ${r.screen.endedAt}, ${r.screen.keyframes} keyframes, ${formatBytes(r.screen.bytes)}`
          : '  screen: not recorded';
        const terms = r.terminals.map(
          (t) =>
            `  terminal ${t.terminalId} (session ${t.session ?? '-'}, ${t.cols}x${t.rows}), ${t.startedAt} – ${t.endedAt}, ${formatBytes(t.bytes)}`,
        );
        const warns = r.warnings.map((w) => `  warning: ${w}`);
        return [head, screen, ...terms, ...warns].join('\n');
      })
      .join('\n') + '\n'
  );
}

export function eventLine(e: ReplayEvent): string {
  const cwd =
    e.cwdUsed || e.cwdObserved
      ? `  [cwd ${e.cwdUsed ?? '-'}${e.cwdObserved && e.cwdObserved !== e.cwdUsed ? ` → ${e.cwdObserved}` : ''}]`
      : '';
  const exit = e.exitCode !== undefined && e.exitCode !== null ? `  exit ${e.exitCode}` : '';
  const err = e.error ? `  error: ${e.error}` : '';
  const warn = e.warnings?.length ? `  warnings: ${e.warnings.join('; ')}` : '';
  return `${e.at}  ${e.kind.padEnd(10)} ${e.summary}${cwd}${exit}${err}${warn}`;
}

/**
 * Runs a replay export and reports its steps as they happen: the export is an operation the server
 * tracks (`listOperations`, kind replay-export), read beside the call until it answers.
 */
async function withExportProgress<T>(
  client: DeskClient,
  sandbox: string,
  onProgress: (message: string, fraction: number | null) => void,
  work: () => Promise<T>,
): Promise<T> {
  const since = Date.now();
  const poll = async (): Promise<void> => {
    try {
      const ops = await client.call('listOperations', { limit: 50 });
      const op = ops.find((x) => x.kind === 'replay-export' && x.sandbox === sandbox && Date.parse(x.startedAt) >= since);
      if (op?.message) onProgress(op.message, op.fraction);
    } catch {
      // Progress is a courtesy: the export's own answer is what counts.
    }
  };
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    void poll().finally(() => (busy = false));
  }, 250);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/** Replay (issue 16): `replay list|events|frame|export|rm`. */
export function addReplayCommands(program: Command, client: () => Promise<DeskClient>, out: Out): void {
  const replay = program
    .command('replay')
    .description("what a sandbox's run looked like: its recorded screen, terminals and events on one clock");

  replay
    .command('list [name]')
    .description('recordings: span, size against the limit, screen, terminals, warnings')
    .option('--json', 'machine-readable output')
    .action(async (name: string | undefined, o: JsonFlag) => {
      const { recordings } = await (await client()).call('replayList', { sandbox: name });
      if (o.json) printJson(out, { recordings });
      else out.stdout(recordingTable(recordings));
    });

  replay
    .command('events <name>')
    .description('what happened, oldest first: agent calls with their cwd, commands, desktop actions, lease changes, checkpoints')
    .option('--since <time>', 'from this time on (ISO 8601, or a duration ago: 10m)')
    .option('--until <time>', 'up to this time')
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: JsonFlag & { since?: string; until?: string }) => {
      const r = await (
        await client()
      ).call('replayEvents', {
        sandbox: name,
        since: o.since === undefined ? undefined : parseTimeArg(o.since, '--since'),
        until: o.until === undefined ? undefined : parseTimeArg(o.until, '--until'),
      });
      if (o.json) return printJson(out, r);
      if (r.events.length === 0)
        return out.stdout(o.since || o.until ? `No events of ${name} in that range.\n` : `No events recorded for ${name}.\n`);
      out.stdout(r.events.map(eventLine).join('\n') + '\n');
    });

  replay
    .command('frame <name>')
    .description('the recorded screen at a time, as an image')
    .requiredOption('--at <time>', 'the time (ISO 8601, or a duration ago: 30s)')
    .option('--out <file>', 'write the image here (default: frame-<time>.png)')
    .option('--max-width <px>', 'scale down to at most this width')
    .option('--json', 'machine-readable output (without the image data)')
    .action(async (name: string, o: JsonFlag & { at: string; out?: string; maxWidth?: string }) => {
      const maxWidth = o.maxWidth === undefined ? undefined : Number(o.maxWidth);
      if (maxWidth !== undefined && !Number.isInteger(maxWidth))
        throw new SandboxDeskError('invalid_input', `--max-width must be a whole number of pixels, got ${o.maxWidth}`);
      const f = await (await client()).call('replayFrame', { sandbox: name, at: parseTimeArg(o.at, '--at'), maxWidth });
      const file = o.out ?? `frame-${f.at.replace(/[:.]/g, '-')}.${f.format === 'jpeg' ? 'jpg' : f.format}`;
      writeFileSync(file, Buffer.from(f.data, 'base64'));
      const { data: _d, ...meta } = f;
      if (o.json) printJson(out, { ...meta, file });
      else out.stdout(`Wrote ${file}: the screen of ${name} at ${f.at} (${f.width}x${f.height}).\n`);
    });

  replay
    .command('export <name>')
    .description('write a range (default: all) to a folder: the screen as MP4 or WebM, each terminal as .cast, events.jsonl')
    .requiredOption('--out <dir>', 'a new folder to write to (made; its parent must exist), or an empty one')
    .option('--from <time>', 'start of the range (ISO 8601, or a duration ago)')
    .option('--to <time>', 'end of the range')
    .option('--format <mp4|webm>', 'the video format', 'mp4')
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: JsonFlag & { out: string; from?: string; to?: string; format: string }) => {
      if (o.format !== 'mp4' && o.format !== 'webm')
        throw new SandboxDeskError('invalid_input', `--format must be mp4 or webm, got ${JSON.stringify(o.format)}`);
      const abort = new AbortController();
      const onSignal = (): void => abort.abort();
      process.once('SIGINT', onSignal);
      // On a terminal one line in place; into a file or a pipe a line per step (--json: one object per step).
      const line = progressLine((s) => out.stderr(s), !o.json && process.stderr.isTTY === true);
      let last = '';
      const onProgress = (message: string, fraction: number | null): void => {
        const step = `${fraction === null ? '' : `${Math.round(fraction * 100)}% `}${message}`;
        if (step === last) return;
        last = step;
        line.update(o.json ? JSON.stringify({ progress: message, fraction }) : `sandbox-desk: ${step}`);
      };
      try {
        const c = await client();
        // Ctrl-C drops the call, which cancels the export on the server; its steps are read beside it.
        const r = await withExportProgress(c, name, onProgress, () =>
          c.call(
            'replayExport',
            {
              sandbox: name,
              // The folder as this shell means it: the server may not share this process's cwd.
              out: o.out.trim() ? resolve(o.out) : o.out,
              format: o.format as 'mp4' | 'webm',
              from: o.from === undefined ? undefined : parseTimeArg(o.from, '--from'),
              to: o.to === undefined ? undefined : parseTimeArg(o.to, '--to'),
            },
            { signal: abort.signal },
          ),
        );
        line.done();
        if (o.json) return printJson(out, r);
        out.stdout(
          [
            `Exported ${name} ${r.from} – ${r.to} to ${r.dir}:`,
            r.video
              ? `  ${r.video.file} (${r.video.width}x${r.video.height}, ${(r.video.durationMs / 1000).toFixed(1)} s)`
              : '  no screen recording in the range',
            ...(r.video?.gaps ?? []).map((g) => `    not recorded ${g.from} – ${g.to} (${g.what}): a card in the video`),
            ...r.casts.map((c) => `  ${c}`),
            `  ${r.events}`,
          ].join('\n') + '\n',
        );
      } finally {
        line.done();
        process.removeListener('SIGINT', onSignal);
      }
    });

  replay
    .command('rm <name>')
    .description("remove a sandbox's recording (a sandbox's recording stays after the sandbox is removed, until this)")
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: JsonFlag) => {
      const r = await (await client()).call('replayRemove', { sandbox: name });
      if (o.json) printJson(out, r);
      else out.stdout(`Removed the recording of ${name} (${formatBytes(r.removedBytes)}).\n`);
    });
}
