import type { Command } from 'commander';
import type { DeskClient } from '../client/http-client.js';
import { CLOSE } from '../shared/stream-close-codes.js';
import { memoryText } from '../shared/memory-text.js';
import { SandboxDeskError } from '../shared/errors.js';
import { DEFAULT_LOG_TAIL as DEFAULT_TAIL, type SandboxStats } from '../shared/observability-types.js';
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
export function addLogsCommands(program: Command, client: () => Promise<DeskClient>, out: Out, signals: SignalSource = process): void {
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
      const tail = parseTail(o.tail);
      // Loaded here, not at the top: the schemas and the log service's defaults are this command's alone.
      const [{ LogRequest }, { validate }] = await Promise.all([import('../api/contract.js'), import('../api/validate.js')]);
      const req = validate(LogRequest, { sandbox: name, source: o.source, tail });
      const c = await client();
      if (o.list) {
        const sources = await c.call('logSources', { sandbox: name });
        if (o.json) return printJson(out, sources);
        for (const s of sources) out.stdout(`${s.id.padEnd(17)} ${s.exists ? 'yes' : 'no '}  ${s.label} — ${s.detail ?? ''}\n`);
        return;
      }
      if (!o.follow) {
        const r = await c.call('readLog', { sandbox: req.sandbox, source: req.source, tail: req.tail ?? DEFAULT_TAIL });
        if (o.json) return printJson(out, r);
        return out.stdout(r.text);
      }
      // The server's log stream (/ws/logs): text frames, the tail first; it closes when the source ends.
      const grant = await c.call('logTicket', { sandbox: req.sandbox, source: req.source, tail: req.tail ?? DEFAULT_TAIL });
      const ws = c.openStream(grant);
      await new Promise<void>((resolve, reject) => {
        const stop = (): void => {
          signals.removeListener('SIGINT', stop);
          signals.removeListener('SIGTERM', stop);
          ws.removeAllListeners('close');
          ws.terminate();
          resolve();
        };
        signals.once('SIGINT', stop);
        signals.once('SIGTERM', stop);
        ws.on('message', (d: Buffer) => {
          const t = d.toString('utf8');
          out.stdout(o.json ? JSON.stringify({ text: t }) + '\n' : t);
        });
        ws.on('error', () => undefined);
        ws.on('close', (code: number, reason: Buffer) => {
          signals.removeListener('SIGINT', stop);
          signals.removeListener('SIGTERM', stop);
          const why = reason.toString('utf8');
          if (code === CLOSE.streamGone) out.stderr(`sandbox-desk: the ${why || 'log ended'}\n`);
          if (code === 1000 || code === CLOSE.streamGone) return resolve();
          reject(
            new SandboxDeskError('service_unavailable', `the log stream closed (${code}${why ? `: ${why}` : ''})`, {
              hint: 'run the command again',
            }),
          );
        });
      });
    });

  program
    .command('stats <name>')
    .description("a running sandbox's CPU (percent of one core) and memory")
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: { json?: boolean }) => {
      const s = await (await client()).call('sandboxStats', { sandbox: name });
      if (o.json) printJson(out, s);
      else out.stdout(statsLine(s));
    });
}
