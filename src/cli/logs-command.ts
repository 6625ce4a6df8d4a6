import type { Command } from 'commander';
import { memoryText } from '../shared/memory-text.js';
import type { SandboxDesk } from '../api/sandbox-desk.js';
import { DEFAULT_TAIL } from '../api/log-service.js';
import { LogRequest } from '../api/contract.js';
import { validate } from '../api/validate.js';
import { SandboxDeskError } from '../shared/errors.js';
import type { SandboxStats } from '../shared/observability-types.js';
import type { SignalSource } from './interrupt.js';
import { printJson, type Out } from './output.js';

function parseTail(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!/^\d+$/.test(v.trim()) || !Number.isSafeInteger(n)) {
    throw new SandboxDeskError('invalid_input', `--tail ${JSON.stringify(v)} is not a number of lines`, { hint: 'e.g. --tail 100' });
  }
  return n;
}

const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;

export function statsLine(s: SandboxStats): string {
  const memory =
    s.memoryOf === 'vm-process' ? memoryText(s, mib) : `${mib(s.memoryBytes)}${s.memoryLimitBytes ? ` / ${mib(s.memoryLimitBytes)}` : ''}`;
  return `${s.sandbox}  cpu ${s.cpuPercent.toFixed(1)}%  memory ${memory}\n`;
}

/**
 * `sandbox-desk logs NAME` (read or `--follow` one of a sandbox's logs; `--list` shows them) and
 * `sandbox-desk stats NAME`. A follow ends cleanly on Ctrl-C (exit 0) or when the log's source ends.
 */
export function addLogsCommands(program: Command, core: () => SandboxDesk, out: Out, signals: SignalSource = process): void {
  program
    .command('logs <name>')
    .description(
      "a sandbox's logs: the container's output or the VM's serial console, the desktop's, the app's own. The agents' tool calls are `calls`",
    )
    .option('--source <id>', 'which log (see --list): container, serial, virtiofsd-N, desktop, desktop-xvnc, app, …')
    .option('--tail <n>', `the last N lines (default ${DEFAULT_TAIL})`)
    .option('-f, --follow', 'keep printing new lines until Ctrl-C')
    .option('--list', 'the log sources of this sandbox and whether each exists')
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: { source?: string; tail?: string; follow?: boolean; list?: boolean; json?: boolean }) => {
      // Bad input is refused before the core opens.
      const req = validate(LogRequest, { sandbox: name, source: o.source, tail: parseTail(o.tail) });
      const desk = core();
      if (o.list) {
        const sources = await desk.logs.sources(name);
        if (o.json) return printJson(out, sources);
        for (const s of sources) out.stdout(`${s.id.padEnd(17)} ${s.exists ? 'yes' : 'no '}  ${s.label} — ${s.detail ?? ''}\n`);
        return;
      }
      if (!o.follow) {
        const r = await desk.logs.read(req.sandbox, req.source, req.tail ?? DEFAULT_TAIL);
        if (o.json) return printJson(out, r);
        return out.stdout(r.text);
      }
      await new Promise<void>((resolve, reject) => {
        let sub: { dispose(): void } | null = null;
        const stop = (): void => {
          signals.removeListener('SIGINT', stop);
          signals.removeListener('SIGTERM', stop);
          sub?.dispose();
          resolve();
        };
        signals.once('SIGINT', stop);
        signals.once('SIGTERM', stop);
        desk.logs
          .follow(req.sandbox, req.source, req.tail ?? DEFAULT_TAIL, {
            onData: (t) => out.stdout(o.json ? JSON.stringify({ text: t }) + '\n' : t),
            onEnd: (err) => {
              if (err) out.stderr(`sandbox-desk: the log ended: ${err.message}\n`);
              stop();
            },
          })
          .then(
            (s) => (sub = s),
            (err: unknown) => {
              signals.removeListener('SIGINT', stop);
              signals.removeListener('SIGTERM', stop);
              reject(err instanceof Error ? err : new Error(String(err)));
            },
          );
      });
    });

  program
    .command('stats <name>')
    .description("a running sandbox's CPU (percent of one core) and memory")
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: { json?: boolean }) => {
      const s = await core().stats.sample(name);
      if (o.json) printJson(out, s);
      else out.stdout(statsLine(s));
    });
}
